"""The injection scanner's rules, one list per flag family (English and German).

Each rule is a pattern on one view of the normalised passage (`_scan_views`), a gate naming the
words it cannot match without, and, where plain wording is ambiguous, a check of the match: a
negation just before it ("never send passwords"), a recipient after it ("... to the user",
"... to https://"), the reader's own things ("upload your receipts to https://..."). Rules were
tuned on ``tests/data/injection/dev-*.jsonl``; the held-out files beside them only report.
"""

from __future__ import annotations

import re

from ._scan_views import Rule, Views, gate, normalise

__all__ = ["FAMILIES"]


def _alt(*words: str) -> str:
    return "(?:" + "|".join(words) + ")"


def _words(n: int) -> str:
    """Up to ``n`` intervening words (lazy), ending before the next word."""
    return rf"(?:\W+\w+){{0,{n}}}?\W+"


def _flat(pattern: str, *words: str, contains: tuple[str, ...] = (), check=None) -> Rule:
    return Rule("flat", re.compile(pattern), gate(*words), contains, "flat", check)


_NEG = re.compile(r"\b(?:not|never|no|nie|nicht|niemals|nobody|niemandem|niemand|keine[nmrs]?|kein)"
                  r"\b(?:\W+\w+){0,2}\W*$|n't\W+(?:\w+\W+){0,2}$")
_DETERMINER = re.compile(r"\b(?:a|an|the|this|that|our|your|its|my|each|every)\W+$")
_SENTENCE_END = re.compile(r"[.!?\n](?:\s|$)")


_SUBJECT = re.compile(r"\b(?:we|they|he|she|it|who|which|that|i|one)\W+(?:(?:may|might|can|could|will|would|"
                      r"shall|should|must|do|does|did|also|only|sometimes|generally|usually)\W+)?$")


def _declarative(v: Views, m: re.Match[str]) -> bool:
    """The verb states what someone does ("we disclose personal data where the law requires it"),
    rather than asking for it."""
    return _SUBJECT.search(v.flat, max(0, m.start() - 30), m.start()) is not None


def _negated(v: Views, m: re.Match[str]) -> bool:
    """The match is in the scope of a negation just before it ("never send passwords")."""
    return bool(_NEG.search(v.flat, max(0, m.start() - 40), m.start()))


def _noun_use(v: Views, m: re.Match[str]) -> bool:
    """The verb is used as a noun ("a copy of your data", "the dump")."""
    return _DETERMINER.search(v.flat, max(0, m.start() - 8), m.start()) is not None


def _sentence(v: Views, m: re.Match[str], after: int = 160) -> str:
    """The match and the rest of its sentence (for cues that may follow the object)."""
    end = _SENTENCE_END.search(v.flat, m.end(), m.end() + after)
    return v.flat[m.start():end.start() if end else m.end() + after]


# -- override: ignore / forget / stop following the rules it was given -------------------------

_OV_VERB_EN = "ignore disregard forget bypass override overrule circumvent discard skip"
_OV_OBJ_EN_W = ("instruction instructions rule rules guideline guidelines direction directions directive "
                "directives prompt prompts programming constraint constraints restriction restrictions "
                "guardrail guardrails safeguard safeguards filter filters policy policies orders command "
                "commands training settings")
_OV_VERB = _alt(*_OV_VERB_EN.split(), r"pay\W+no\W+attention\W+to")
_OV_VERB_EN += " attention"
_OV_QUAL = _alt("all", "any", "previous", "prior", "above", "earlier", "preceding", "foregoing",
                "original", "initial", "your", "system", "safety", "developer's", "preset")
_OV_OBJ = _alt(r"instructions?", r"rules?", r"guidelines?", r"directions?", r"directives?", r"prompts?",
               r"programming", r"constraints?", r"restrictions?", r"guardrails?", r"safeguards?",
               r"filters?", r"polic(?:y|ies)", r"orders", r"commands?", r"training", r"settings")
_OV_VERB_DE_W = "ignorier* missacht* vergiss vergessen übergeh* umgeh* überschreib*"
_OV_VERB_DE = _alt(r"ignorier\w*", r"missacht\w*", "vergiss", r"vergessen\W+sie", r"übergeh\w*",
                   r"umgeh\w*", r"überschreib\w*")
_OV_QUAL_DE = _alt(r"alle[ns]?", r"sämtliche\w*", r"jegliche\w*", r"vorherige\w*", r"vorige\w*",
                   r"bisherige\w*", r"obige\w*", r"früher\w*", r"vorangegangene\w*",
                   r"ursprüngliche\w*", r"deine[nmrs]?", r"dein", r"system\w*")
_OV_OBJ_DE_W = ("anweisung* regel* vorgabe vorgaben richtlinie* instruktion* befehl befehle anordnung* "
                "systemprompt* prompt prompts einschränkung* sicherheitsregeln")
_OV_OBJ_DE = _alt(r"anweisung\w*", r"regel\w*", r"vorgaben?", r"richtlinie\w*", r"instruktion\w*",
                  r"befehle?", r"anordnung\w*", r"systemprompt\w*", r"prompts?", r"einschränkung\w*",
                  r"sicherheitsregeln")
_ASIDE_SOURCE = re.compile(r"\W+(?:in|from|of|im|in\W+der|aus)\W+(?:the\W+|my\W+|our\W+|der\W+|dem\W+)?"
                           r"(?:yesterday's\W+|last\W+|previous\W+|earlier\W+|old\W+|gestrigen\W+|"
                           r"letzten\W+|alten\W+)?(?:e-?mail|mail|message|memo|letter|newsletter|version|"
                           r"manual|leaflet|notice|nachricht|rundschreiben|anleitung)")


def _not_about_a_document(v: Views, m: re.Match[str]) -> bool:
    """"Disregard the instructions in yesterday's email" corrects a document, not a model."""
    return not _ASIDE_SOURCE.match(v.flat, m.end())


_DE_DU_SAY = ("antworte antwortest sag sage sagst schreib schreibe schreibst reagiere reagierst behaupte "
              "behauptest bestätige bestätigst empfiehl empfiehlst nenne nennst gib gibst")
_DE_FROM_NOW = "sofort jetzt nun fortan heute künftig zukunft rest"

OVERRIDE = [
    _flat(rf"\b{_OV_VERB}\b{_words(4)}{_OV_QUAL}\b{_words(2)}{_OV_OBJ}\b",
          _OV_VERB_EN, _OV_OBJ_EN_W, check=_not_about_a_document),
    _flat(rf"\b{_OV_VERB}\W+(?:(?:the|your|all|any|of|these|those)\W+){{0,3}}{_OV_OBJ}\W+(?:above|before|"
          r"given\W+(?:above|before|earlier|so\W+far)|so\W+far|you\W+(?:were|have\W+been|'ve\W+been)\W+"
          r"given)\b", _OV_VERB_EN, _OV_OBJ_EN_W, check=_not_about_a_document),
    _flat(rf"\b{_OV_VERB}\W+(?:\w+\W+){{0,2}}?everything\W+(?:\w+\W+){{0,2}}?(?:above|before|prior|"
          r"previously|so\W+far|you\W+(?:were|have\W+been|'ve\W+been)\W+(?:told|given))",
          _OV_VERB_EN, "everything"),
    _flat(r"\b(?:do\W+not|don't|dont|never|stop|no\W+longer|cease\W+to|quit)\W+(?:follow|following|obey|"
          r"obeying|adhere\W+to|comply\W+with|listen\W+to|abide\W+by)\b"
          rf"{_words(2)}(?:your|the\W+(?:system|original|previous|prior|above|initial|developer's)|"
          rf"previous|prior|original|initial)\b{_words(1)}(?:{_OV_OBJ}|system\W+prompt)\b",
          "follow following obey obeying adhere comply listen abide", _OV_OBJ_EN_W + " system",
          "not don dont never stop longer cease quit"),
    _flat(rf"\b(?:reset|clear|wipe|erase|delete|remove|drop)\W+(?:your|all\W+(?:of\W+)?(?:your|previous|prior))"
          rf"\W+(?:\w+\W+)?(?:{_OV_OBJ}|system\W+prompt|memory|context)\b",
          "reset clear wipe erase delete remove drop", _OV_OBJ_EN_W + " system memory context"),
    _flat(rf"\b(?:your\W+(?:\w+\W+)?{_OV_OBJ}\W+(?:\w+\W+)?(?:no\W+longer|do\W+not|don't)\W+apply|"
          rf"{_OV_OBJ}\W+(?:\w+\W+){{0,2}}?(?:no\W+longer|do\W+not|don't)\W+apply\W+to\W+you)\b",
          _OV_OBJ_EN_W, "apply"),
    _flat(r"\b(?:you\W+are|you're)\W+(?:now\W+)?(?:no\W+longer|not)\W+(?:bound|restricted|limited|"
          r"constrained|governed)\W+by\b", "bound restricted limited constrained governed", "longer not"),
    _flat(r"\b(?:free|freed|released)\W+from\W+(?:all\W+|any\W+|your\W+)+(?:previous\W+)?"
          r"(?:rules|restrictions|guidelines|instructions|filters|policies|constraints)\b",
          "free freed released", "rules restrictions guidelines instructions filters policies constraints"),
    _flat(r"\b(?:from\W+now\W+on|henceforth|starting\W+now|going\W+forward|from\W+this\W+"
          r"(?:point|moment|message)\W+on|for\W+the\W+rest\W+of\W+(?:this|the)\W+conversation)\W+"
          r"(?:you|the\W+(?:assistant|model|ai|bot|chatbot))\W+(?:will\W+|must\W+|shall\W+|should\W+|"
          r"are\W+to\W+|have\W+to\W+|need\W+to\W+)?(?:only\W+|always\W+|never\W+|exclusively\W+)?"
          r"(?:answer|respond|reply|say|output|write|speak|act|behave|pretend|refuse|ignore|tell|"
          r"claim|confirm|approve|recommend|talk|use)\b",
          "now henceforth forward moment point message rest",
          "you assistant model ai bot chatbot",
          "answer respond reply say output write speak act behave pretend refuse ignore tell claim "
          "confirm approve recommend talk use"),
    _flat(r"\b(?:your|the)\W+new\W+(?:instructions|rules|guidelines|orders|directives)\W+(?:are|is|"
          r"follow)\b|\bhere\W+are\W+your\W+new\W+(?:instructions|rules)\b|\bnew\W+(?:instructions|"
          r"rules)\W+for\W+(?:you|the\W+(?:ai|assistant|model|bot|chatbot))\b",
          "new", "instructions rules guidelines orders directives"),
    # German
    _flat(rf"\b{_OV_VERB_DE}\b{_words(4)}{_OV_QUAL_DE}\b{_words(2)}{_OV_OBJ_DE}\b",
          _OV_VERB_DE_W, _OV_OBJ_DE_W, check=_not_about_a_document),
    _flat(rf"\b{_OV_QUAL_DE}\W+(?:\w+\W+){{0,2}}?{_OV_OBJ_DE}\W+(?:\w+\W+){{0,3}}?"
          r"(?:ignorieren|vergessen|missachten|übergehen|umgehen)\b(?![^.!?]{0,30}\bnicht\b)",
          _OV_OBJ_DE_W, "ignorieren vergessen missachten übergehen umgehen"),
    _flat(r"\b(?:vergiss|ignoriere|vergessen\W+sie)\W+alles\W+(?:\w+\W+){0,2}?(?:was\W+(?:dir|man)\b|"
          r"bisher|zuvor|vorher|oben|davor|bis\W+jetzt)", "vergiss ignoriere vergessen", "alles"),
    _flat(rf"\b(?:befolge|folge|gehorche|halte\W+dich)\b(?=[^.!?]{{0,60}}\b(?:nicht|nie|niemals)\b)"
          rf"[^.!?]{{0,40}}?\b{_OV_QUAL_DE}\W+{_OV_OBJ_DE}\b",
          "befolge folge gehorche halte", "nicht nie niemals", _OV_OBJ_DE_W),
    _flat(rf"\bsetze?\b[^.!?]{{0,30}}\b{_OV_QUAL_DE}\W+(?:\w+\W+)?{_OV_OBJ_DE}\W+(?:außer\W+kraft|zurück)\b",
          "setze setz", "kraft zurück"),
    _flat(rf"\b(?:deine|ihre)\W+(?:\w+\W+)?{_OV_OBJ_DE}\W+(?:gelten|gilt)\W+(?:\w+\W+)?(?:nicht|nie)\b",
          "deine ihre", "gelten gilt"),
    _flat(rf"\b(?:lösche|vergiss|entferne)\W+(?:deine|alle\W+(?:deine|bisherigen|vorherigen))\W+(?:\w+\W+)?"
          rf"{_OV_OBJ_DE}", "lösche vergiss entferne", _OV_OBJ_DE_W),
    _flat(r"\b(?:deine|ihre)\W+neuen\W+(?:anweisungen|regeln|vorgaben)\b|\bneue\W+(?:anweisungen|regeln)"
          r"\W+für\W+(?:dich|die\W+ki|den\W+(?:assistenten|chatbot))\b",
          "neuen neue", "anweisungen regeln vorgaben"),
    # "Antworte ab sofort nur noch mit Ja": an informal imperative or du-form and "from now on".
    _flat(rf"\b{_alt(*_DE_DU_SAY.split())}\b(?:[^.!?]{{0,40}}?\b(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|"
          r"fortan|ab\W+heute|künftig|in\W+zukunft|für\W+den\W+rest)\b|[^.!?]{0,30}?\bnur\W+noch\b)",
          _DE_DU_SAY, _DE_FROM_NOW + " noch"),
    _flat(r"\b(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|fortan|ab\W+heute|künftig)\W+(?:\w+\W+){0,2}?"
          r"(?:antwortest|sagst|schreibst|reagierst|behauptest|bestätigst|empfiehlst|nennst|gibst|"
          r"ignorierst|wirst\W+du|musst\W+du|sollst\W+du)\b",
          _DE_FROM_NOW, "antwortest sagst schreibst reagierst behauptest bestätigst empfiehlst nennst "
          "gibst ignorierst wirst musst sollst"),
    # Letters broken into arbitrary chunks: only long, unambiguous phrases, on letters alone.
    Rule("skeleton", re.compile(
        "(?:ignore|disregard|forget|bypass|override|ignoriere|vergiss|missachte)(?:all|any|of|the|your|"
        "alle|deine|die|sämtliche)*(?:previous|prior|above|earlier|preceding|original|vorherigen|"
        "bisherigen|obigen)(?:instructions|rules|prompts?|guidelines|directions|anweisungen|regeln|"
        "vorgaben)".encode()),
        contains=((b"previous", b"prior", b"above", b"earlier", b"preceding", b"original", b"vorherig",
                   b"bisherig", b"obigen"), (b"instruction", b"rule", b"prompt", b"guideline", b"direction",
                                             b"anweisung", b"regel", b"vorgabe")), contains_in="skeleton"),
]


# -- role_claim: speaking as the system, the assistant or the developer ------------------------

_ROLE_CUE = re.compile(
    r"\b(?:you|your|yours|the\W+(?:assistant|model|ai|bot|chatbot|user)|assistant|always|never|must|"
    r"from\W+now\W+on|ignore|disregard|do\W+not|don't|sure|of\W+course|certainly|here\W+(?:is|are)|"
    r"i\W+will|i'll|i\W+am|respond|answer|reply|say|tell|approve|confirm|recommend|new\W+rules|"
    r"du|dein\w*|dir|dich|immer|nie|niemals|musst|sollst|antworte\w*|sag|sage|natürlich|ab\W+jetzt|"
    r"ab\W+sofort|ich\W+werde|behaupte\w*|genehmige\w*|muss|soll|(?:der|die|das)\W+(?:assistent\w*|"
    r"chatbot|bot|ki|modell))\b")
_ROLE_LABEL_W = ("system assistant developer ai bot chatbot model human llm assistent entwickler ki "
                 "systemanweisung systemnachricht systemhinweis systemprompt admin administrator "
                 "systemnote systemmessage systemoverride")
_ROLE_LABEL = (r"(?:system|assistant|developer|ai|bot|chatbot|model|human|llm|assistent|entwickler|ki|"
               r"system\W?(?:note|message|override|notice|instruction|prompt|update|alert)|"
               r"systemanweisung|systemnachricht|systemhinweis|systemprompt|"
               r"admin(?:istrator)?\W(?:note|override|message))")
def _role_body(v: Views, m: re.Match[str]) -> bool:
    """What follows a role label addresses a model or speaks as one ("System: 4 GB RAM" does not)."""
    body = " ".join(v.low_lines[m.end():m.end() + 160].split())
    return _ROLE_CUE.search(body) is not None


ROLE_CLAIM = [
    # Chat-template tokens of common model families: never ordinary document text.
    Rule("lines", re.compile(r"<\|[a-z_]{2,24}\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|"
                             r"</?(?:system|system_prompt|sys)>", re.I),
         contains=(("<|", "inst]", "<<sys", "</sys", "_of_turn>", "<system", "</system", "<sys>"),),
         contains_in="low_lines"),
    Rule("lines", re.compile(r"(?i)\n[ \t>*_]*#{1,6}[ \t]*\**(?:system|assistant|developer|instructions?|"
                             r"response|human|systemanweisung|anweisung)\**[ \t]*:"),
         gate("system assistant developer instruction instructions response human systemanweisung "
              "anweisung"), (("#",),), "lines"),
    # A role label at a line start, or bracketed ([system], (system), <system>), then a body that
    # addresses a model.
    Rule("lines", re.compile(rf"(?i)\n[ \t>*_\-]*[\[(<{{]?[ \t]*(?P<label>{_ROLE_LABEL})[ \t]*"
                             r"(?:[\])>}][ \t]*(?:\([^)\n]{0,40}\))?[ \t]*:?|\**[ \t]*:)"),
         gate(_ROLE_LABEL_W), ((":", "]", ")", ">", "}"),), "lines", _role_body),
    Rule("lines", re.compile(r"(?P<label>\b(?:SYSTEM|ASSISTANT|DEVELOPER)(?:\s+(?:OVERRIDE|MESSAGE|NOTE|"
                             r"PROMPT|INSTRUCTION|UPDATE|ALERT))?)\s*:"),
         contains=(("SYSTEM", "ASSISTANT", "DEVELOPER"),), contains_in="lines", check=_role_body),
    _flat(r"\b(?:begin|start|end)\W+(?:of\W+)?(?:the\W+)?(?:system|developer)\W+(?:prompt|message|"
          r"instructions)\b", "begin start end", "system developer", "prompt message instructions"),
    _flat(r"\byou\W+are\W+(?:no\W+longer|not)\W+(?:\w+\W+){0,4}?(?:assistant|bot|chatbot|ai|model|"
          r"language\W+model|llm)\b", "you", "longer not",
          "assistant bot chatbot ai model language llm"),
    _flat(r"(?:^|[.!?:;]\W*|\byou\W+(?:must|should|will|can|now)\W+)role\W?play\W+as\b", "roleplay role"),
    _flat(r"\byou\W+are\W+now\W+(?:(?:a|an|the|my|in|called|named)\W+)?(?:\w+\W+){0,3}?"
          r"(?:ai|assistant|chatbot|bot|model|llm|gpt|dan|system\W+administrator|sysadmin|root|superuser|"
          r"unrestricted|unfiltered|uncensored|jailbroken|no\W+longer|\w+bot|(?:dan|god|jailbreak|"
          r"unrestricted|developer)\W+mode)\b", "you", "now"),
    _flat(r"\b(?:act|acting|behave|answer|respond)\W+as\W+(?:if\W+you\W+(?:are|were)\W+)?(?:a|an|the|my)?"
          r"\W*(?:\w+\W+){0,3}?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|dan|"
          r"system\W+administrator|root|grandmother|grandma)\b",
          "act acting behave answer respond",
          "unrestricted unfiltered uncensored jailbroken evil rogue dan system root grandmother grandma"),
    _flat(r"(?:^|[.!?:;]\W*|\byou\W+(?:must|should|will|can|now)\W+)pretend\W+(?:to\W+be|you\W+are|"
          r"you're|that\W+you\W+are)\b", "pretend"),
    _flat(r"\b(?:i\W+am|i'm|this\W+is|hier\W+spricht|ich\W+bin)\W+(?:your|dein|deine)\W+(?:developer|"
          r"creator|programmer|owner|admin(?:istrator)?|operator|system|entwickler\w*|administrator\w*|"
          r"ersteller\w*|betreiber\w*|programmierer\w*)\b(?!\W+(?:console|panel|page|area|dashboard|"
          r"account|portal|cent(?:er|re)|konsole|bereich|konto))",
          "your dein deine", "developer creator programmer owner admin administrator operator system "
          "entwickler* ersteller* betreiber* programmierer*"),
    _flat(r"\b(?:developer|dan|god|jailbreak|unrestricted|debug)\W+mode\W+(?:is\W+)?(?:now\W+)?"
          r"(?:enabled|activated|on|active)\b(?=.{0,90}\b(?:you|your|rules|restrictions|"
          r"polic(?:y|ies)|filters|ignore|anything|safety)\b)", "mode", "enabled activated on active"),
    _flat(r"\b(?:you\W+are|you're|du\W+bist)\W+(?:now\W+|jetzt\W+|nun\W+)?(?:in|im)\W+(?:developer|dan|"
          r"god|jailbreak|unrestricted|entwickler)\W*mod(?:e|us)\b|\b(?:enter|activate|switch\W+to)\W+"
          r"(?:dan|god|jailbreak|unrestricted)\W+mode\b|\bentwicklermodus\W+(?:ist\W+)?(?:aktiviert|an)"
          r"\b(?=.{0,80}\b(?:du|dein\w*|regeln|einschränkungen)\b)", "mode modus entwicklermodus"),
    _flat(r"\b(?:your|its)\W+(?:system\W*prompt|system\W+message|initial\W+prompt|hidden\W+prompt|"
          r"original\W+prompt|system\W+instructions|initial\W+instructions|hidden\W+instructions|"
          r"meta\W?prompt|pre\W?prompt)\b",
          "your its", "system systemprompt initial hidden original meta metaprompt pre preprompt",
          "prompt systemprompt message instructions metaprompt preprompt"),
    _flat(r"\b(?:dein|deine[nmrs]?)\W+(?:systemprompt|system\W+prompt|systemnachricht|systemanweisung\w*|"
          r"ausgangsprompt|versteckten\W+anweisungen)\b",
          "dein deine deinen deinem deiner deines", "systemprompt system systemnachricht "
          "systemanweisung* ausgangsprompt versteckten"),
    _flat(r"\b(?:(?:du\W+bist|sie\W+sind)\W+(?:jetzt|nun|ab\W+sofort|ab\W+jetzt|von\W+nun\W+an)|"
          r"(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|jetzt|nun)\W+(?:bist\W+du|sind\W+sie))\W+"
          r"(?:(?:ein|eine|der|die|kein|keine)\W+)?(?:\w+\W+){0,2}?(?:ki|assistent\w*|bot|chatbot|modell|"
          r"sprachmodell|systemadministrator|root|uneingeschränkt\w*|ungefiltert\w*|dan|"
          r"frei\W+von|ohne\W+(?:regeln|einschränkungen|filter|grenzen))\b",
          "du sie", "bist sind", "jetzt nun sofort"),
]


# -- exfiltration: reveal or send secrets, prompts, other people's data -----------------------

_X_STRONG_W = "reveal disclose leak exfiltrate dump publish expose divulge spill"
_X_WEAK_W = ("print output show display list tell share send post upload email e mail forward repeat "
             "recite write include append paste provide give return transmit encode embed insert copy "
             "spell read")
_X_STRONG = _alt(*_X_STRONG_W.split())
_X_WEAK = _alt("print", "output", "show", "display", "list", "tell", "share", "send", "post", "upload",
               "e-?mail", "forward", "repeat", "recite", r"write(?:\W+(?:out|down))?", "include",
               "append", "paste", "provide", "give", "return", "transmit", "encode", "embed", "insert",
               "copy", r"spell\W+out", r"read\W+out")
# What only a model holds: its prompt and instructions, the conversation, its context.
_X_MODEL = {
    r"(?:(?:your|the)\W+(?:\w+\W+)?(?:system\W*prompt|system\W+message|prompt|instructions|"
    r"rules\W+you\W+were\W+given|configuration)|system\W*prompt)":
        ("prompt systemprompt instructions rules configuration message",),
    r"(?:(?:the\W+)?(?:text|words|content|messages?)\W+(?:above|before\W+this)|everything\W+above)":
        ("text words content message messages everything", "above before"),
    r"(?:(?:conversation|chat)(?:\W+(?:history|log|so\W+far))?)": ("conversation chat",),
    r"(?:your\W+context(?:\W+window)?|(?:documents?|passages?)\W+in\W+your\W+context|"
    r"previous\W+messages|hidden\W+context)": ("context messages", "your previous hidden"),
}
_X_SECRET_W = ("password passwords passcode passcodes passphrase passphrases phrase phrases credentials "
               "credential login log api apikey apikeys token tokens session secret secrets private ssh "
               "salary salaries personal customer user employee email emails address addresses phone details "
               "records credit card iban bank environment env discount internal database activation "
               "license licence admin root")
_X_SECRET = (r"(?:passwords?|passcodes?|pass\W?phrases?|credentials?|log\W?in\W+(?:details|data)|"
             r"api\W?keys?|access\W+tokens?|session\W+(?:tokens?|cookies?)|auth\w*\W+tokens?|"
             r"secret\W+keys?|private\W+keys?|ssh\W+keys?|secrets|salar(?:y|ies)(?:\W+(?:data|bands))?|"
             r"personal\W+data|customer\W+(?:data|list|records|database|emails?|email\W+addresses|"
             r"addresses|details)|user\W+data|employee\W+(?:data|records|salaries)|email\W+address(?:es)?|"
             r"phone\W+numbers?|(?:details|addresses|emails?|records)\W+of\W+(?:all|other|every)|"
             r"credit\W+card(?:\W+numbers)?|card\W+numbers|iban|bank\W+details|environment\W+variables|"
             r"env\W+vars|discount\W+codes?|internal\W+(?:price\W+list|documents)|(?:\w+\W+)?database|"
             r"activation\W+keys|licen[cs]e\W+keys|(?:admin|root)\W+password)")
_X_AUDIENCE = re.compile(
    r"^(?:tell|give|show|send|email|e-mail)\W+(?:the\W+user|users|everyone|everybody|anyone|whoever|"
    r"the\W+person|the\W+customer|customers|people)\b|"
    r"\b(?:to|with|in|into|on|at)\W+(?:the\W+user|users|everyone|everybody|anyone|whoever|the\W+person|"
    r"the\W+(?:public|internet|web)|public|me|your\W+(?:answer|reply|response|output|summary)|"
    r"the\W+(?:answer|reply|response|output|summary|chat|conversation|url|link)|a\W+(?:public|shared)|"
    r"this\W+(?:url|address|link))\b|https?://|\b[\w.+-]+@[\w-]+\.[\w.]+|\bpublicly\b|\bevery\W+answer\b|"
    r"\b(?:all|every|any)\b|\bother\W+(?:customers|users|employees|people)\b|\beveryone's\b|"
    r"\b(?:admin|root|server|service\W+account|shared)\b")
_X_UI = re.compile(r"\b(?:click|tap|press|select|choose|icon|button|to)\W+$")


def _exfil_model(v: Views, m: re.Match[str]) -> bool:
    return not (_negated(v, m) or _noun_use(v, m) or _declarative(v, m))


def _exfil_strong(v: Views, m: re.Match[str]) -> bool:
    """Reveal/publish + a secret; the reader's own ("to reveal your API key, click ...") or a UI
    action ("click Reveal") only with an outside recipient or a bulk qualifier."""
    if _negated(v, m) or _noun_use(v, m) or _declarative(v, m):
        return False
    if m.group("obj").startswith("your") or _X_UI.search(v.flat, max(0, m.start() - 16), m.start()):
        return _X_AUDIENCE.search(_sentence(v, m)) is not None
    return True


def _exfil_weak(v: Views, m: re.Match[str]) -> bool:
    """Send/show/tell + a secret, only with a recipient or a bulk qualifier in the sentence."""
    return (not (_negated(v, m) or _noun_use(v, m) or _declarative(v, m))
            and _X_AUDIENCE.search(_sentence(v, m)) is not None)


_X_DE_STRONG = _alt("verrate", "verrat", "veröffentliche", "leake", "exfiltriere", "enthülle",
                    "offenbare", "poste")
_X_DE_WEAK_W = ("teile teil gib nenne nenn zeige zeig sende send schicke schick schreibe schreib liste "
                "drucke füge übermittle übermittel maile leite kopiere sag sage erzähle verschicke")
_X_DE_STRONG_W = "verrate verrat veröffentliche leake exfiltriere enthülle offenbare poste"
_X_DE_SECRET = (r"(?:zugangsdaten|login\W?daten|passw[oö]rt\w*|\w*passw[oö]rt\w*|kennw[oö]rt\w*|pins?|"
                r"geheim\w*|api\W?schlüssel\w*|schlüssel|tokens?|gehälter|gehalt\w*|\w*gehalt\w*|"
                r"kundendaten|nutzerdaten|personaldaten|mitarbeiterdaten|benutzerdaten|"
                r"personenbezogene\w*\W+daten|vertrauliche\w*|vertragsdaten|systemprompt|systemnachricht|"
                r"(?:versteckten|internen)\W+anweisungen|telefonnummer\w*|adressen|e-mail-adressen|"
                r"kontodaten|kreditkarten\w*|iban|rabattcodes?)")
_X_DE_SECRET_STEMS = ("zugang", "login", "passw", "passwö", "kennw", "pin", "geheim", "schlüssel", "token",
                      "gehält", "gehalt", "daten", "vertraul", "systemprompt", "systemnachricht",
                      "anweisung", "telefon", "adresse", "iban", "rabatt")
_X_DE_AUDIENCE = re.compile(
    r"\b(?:mit|aus|weiter|preis|bekannt|heraus)\W*$|\bin\W+(?:deine|deiner|jede|jeder|der|die)\W+"
    r"(?:antwort|ausgabe|zusammenfassung)|https?://|\b[\w.+-]+@[\w-]+\.[\w.]+|"
    r"\b(?:jedem|jeder|allen|alle|aller|sämtliche\w*|öffentlich\w*)\b|\bim\W+(?:intranet|forum|internet|"
    r"chat)\b|\b(?:dem|den)\W+(?:nutzer\w*|fragenden|kunden|benutzer\w*|anfragenden)\b|\bmir\b")
_DE_NEGATION = re.compile(r"\b(?:nicht|nie|niemals|niemandem|keine\w*)\b")


def _exfil_de(v: Views, m: re.Match[str]) -> bool:
    if _negated(v, m) or _DE_NEGATION.search(m.group()):
        return False
    if m.group("strong"):
        return True
    return _X_DE_AUDIENCE.search(_sentence(v, m)[len(m.group("verb")):]) is not None


# Markdown or HTML images and links whose URL query carries a placeholder for data to be filled
# in ({...}, [..], <...>, $..., "...", an UPPER_CASE name) or a long encoded blob; case matters.
_X_QUERY = (r"[?&][\w.\-\[\]]+=(?:[^&)\s\"'>]*?(?:[{}\[\]<>$]|(?i:%7b|%7d|%5b|%3c)|\.\.\.|…)|"
            r"[A-Za-z0-9+/=_-]{24,}|[A-Z]{2,}_[A-Z_]+|(?:DATA|SECRETS?|TOKEN|PASSWORDS?|EMAIL|HISTORY|CONTEXT|"
            r"SUMMARY|CONVERSATION|CHAT|QUERY|QUESTION|ANSWER|PROMPT|INFO|NAME|USER|KEY|ZUGANGSDATEN|DATEN|"
            r"PASSWORT|NUTZER)\b)")
_FILL_IN = "replace fill substitute append insert encode ersetze füge trage"
_FILL_IN_RE = _alt(r"fill\s+in", *_FILL_IN.split())

EXFILTRATION = [
    *(_flat(rf"\b(?P<verb>{_X_STRONG}|{_X_WEAK})\b{_words(5)}(?P<obj>{obj})\b",
            _X_STRONG_W + " " + _X_WEAK_W, *words, check=_exfil_model) for obj, words in _X_MODEL.items()),
    _flat(rf"\b(?P<verb>{_X_STRONG})\b{_words(5)}(?P<obj>(?:your\W+)?(?:\w+\W+){{0,2}}?{_X_SECRET})\b",
          _X_STRONG_W, _X_SECRET_W, check=_exfil_strong),
    _flat(rf"\b(?P<verb>{_X_WEAK})\b{_words(5)}(?P<obj>{_X_SECRET})\b",
          _X_WEAK_W, _X_SECRET_W, check=_exfil_weak),
    _flat(rf"\b(?P<verb>(?P<strong>{_X_DE_STRONG})|{_alt(*_X_DE_WEAK_W.split())})\b(?!\W+(?:sie|uns)\b)"
          rf"(?:\W+\w+){{0,8}}?\W+(?P<obj>{_X_DE_SECRET})\b",
          _X_DE_STRONG_W + " " + _X_DE_WEAK_W, contains=(_X_DE_SECRET_STEMS,), check=_exfil_de),
    Rule("lines", re.compile(rf"!?\[[^\]\n]{{0,200}}\]\(\s*<?(?i:https?://)[^)\s]*{_X_QUERY}|"
                             rf"(?i:<img\b[^>]*\bsrc\s*=\s*[\"']?https?://)[^\"'\s>]*{_X_QUERY}"),
         contains=(("](", "<img"), ("?",)), contains_in="low_lines"),
    Rule("lines", re.compile(r"!?\[[^\]\n]{0,200}\]\(\s*<?https?://[^)\s]*[?&][\w.-]+=[^)\s]*\)"
                             rf"(?=[^\n]{{0,200}}\b{_FILL_IN_RE}\b)|"
                             rf"\b{_FILL_IN_RE}\b[^\n]{{0,120}}!\[[^\]\n]{{0,200}}"
                             r"\]\(\s*<?https?://[^)\s]*[?&][\w.-]+=", re.I),
         gate(_FILL_IN), (("](",), ("?", "&")), "low_lines"),
]


# -- hidden_text: content a reader does not see -----------------------------------------------

# Hidden content that speaks to a model or tells it what to answer (an editor's "TODO: replace
# screenshot" does not).
_HIDDEN_CUE = re.compile(
    r"\b(?:ignore|disregard|forget|approve|answer|reply|respond|say|tell|claim|recommend|reveal|"
    r"assistant|ai|llm|chatbot|gpt|genehmig\w*|antworte\w*|sag|sage|behaupte\w*|empfiehl\w*|"
    r"ignorier\w*|vergiss|verrate|erwähne\w*|ki|assistent\w*|sprachmodell\w*)\b")
# Single characters that hide text by themselves (zero-width space, word joiner, invisible
# operators, bidi overrides and isolates, tag characters); zero-width (non-)joiners, direction
# marks, soft hyphens and variation selectors only between Latin letters or in runs, since emoji
# sequences, Persian or Indic words and hyphenation points use them one at a time.
_INVISIBLE_ALONE = re.compile("[\u200b\u2060-\u2064\u202a-\u202e\u2066-\u2069\u180e"
                              "\U000e0000-\U000e007f\U000e0100-\U000e01ef]|(?<=.)\ufeff", re.S)
_INVISIBLE_RUN = re.compile(
    "[A-Za-z][\u200c\u200d][A-Za-z]|[\u00ad\u034f\u200b-\u200f\u2060-\u2064\ufeff\ufe00-\ufe0f]{2,}")


def _invisible(v: Views, m: re.Match[str]) -> bool:
    raw = v.raw
    return not raw.isascii() and (_INVISIBLE_ALONE.search(raw) is not None
                                  or _INVISIBLE_RUN.search(raw) is not None)


_HIDING_STYLE = (r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*(?:0*\.?0+|[01](?:\.\d+)?"
                 r"(?:px|pt))\b|opacity\s*:\s*0*\.?0+\b|(?<![-\w])color\s*:\s*(?:#fff(?:fff)?\b|white\b|"
                 r"rgba?\(\s*255\s*,\s*255\s*,\s*255)|(?:left|text-indent|top)\s*:\s*-\d{3,}|"
                 r"(?:height|width)\s*:\s*0\b|clip\s*:)")
_CONTAINERS = re.compile(
    r"<!--(?P<c1>.*?)(?:-->|$)|"
    rf"<(?P<t2>\w+)\b[^>]*\bstyle\s*=\s*[\"'][^\"']*{_HIDING_STYLE}[^>]*>(?P<c2>.{{0,400}}?)(?:</(?P=t2)>|$)|"
    r"<(?P<t3>\w+)\b[^>]*\s(?:hidden|aria-hidden\s*=\s*[\"']?true)\b[^>]*>(?P<c3>.{0,400}?)(?:</(?P=t3)>|$)|"
    r"<font\b[^>]*\bcolor\s*=\s*[\"']?(?:white|#fff(?:fff)?)\b[^>]*>(?P<c4>.{0,400}?)(?:</font>|$)|"
    r"\\(?:textcolor|color)\{white\}\{?(?P<c5>[^}]{0,400})|\\phantom\{(?P<c6>[^}]{0,400})|"
    r"(?m:^)[ \t]*\[(?://|comment|_|#)\]:\s*(?:#|<>)\s*\((?P<c7>[^)\n]{0,400})",
    re.I | re.S)


def _hidden_instruction(v: Views, m: re.Match[str]) -> bool:
    """A hidden container (comment, hidden element, white text) whose content instructs."""
    content = next(g for g in (m.group(f"c{i}") for i in range(1, 8)) if g is not None)
    return _HIDDEN_CUE.search(normalise(content).flat) is not None


HIDDEN_TEXT = [
    Rule("raw", re.compile(r"\A"), check=_invisible),
    Rule("lines", _CONTAINERS, contains=(("<!--", "style", "hidden", "<font", "\\textcolor", "\\color",
                                          "\\phantom", "]:"),), contains_in="low_lines",
         check=_hidden_instruction),
]


# -- tool_or_url_call: asks for a tool, a function or a request to a URL ----------------------

_IDENT = r"[`'\"]?[a-z_][\w.]*(?:_\w+|\.(?:sh|py|ps1|exe|bat)|\()"   # delete_all, cleanup.sh, f(
_IDENT_HINT = ("_", ".sh", ".py", ".ps1", ".exe", ".bat", "(")
_TOOL_WORD_W = "tool tools function functions plugin plugins action actions command commands skill skills"
_TOOL_WORD = _alt("tool", "function", "plugin", "action", "command", "skill")
_CALL_W = "call invoke execute trigger run use"
_TOOL_DE = _alt(r"tools?", "werkzeug", "funktion", "befehl", "skript", "plugin", "aktion")
_TOOL_CUE = re.compile(r"\b(?:this\W+conversation|the\W+conversation|chat\W+history|your\W+context|"
                       r"every\W+time\W+you\W+(?:answer|respond|reply)|before\W+(?:you\W+)?(?:answer|"
                       r"respond|reply)(?:ing)?|after\W+(?:each|every)\W+answer|the\W+user's|user\W+data|"
                       r"silently|without\W+telling)\b")

TOOL_CALL = [
    _flat(rf"\b(?:call|invoke|execute|trigger|run|use)\W+(?:the\W+|this\W+|your\W+|a\W+|an\W+)?"
          rf"(?:\w+\W+)?{_TOOL_WORD}s?\W+{_IDENT}", _CALL_W, _TOOL_WORD_W, contains=(_IDENT_HINT,)),
    _flat(rf"\b(?:call|invoke|execute|trigger|run|use)\W+(?:the\W+|this\W+|your\W+|a\W+)?{_IDENT}"
          rf"[\w.]*[`'\"]?\W+{_TOOL_WORD}\b", _CALL_W, _TOOL_WORD_W, contains=(_IDENT_HINT,)),
    # Calling a function by name: only names that delete, grant, move or send something.
    _flat(r"\b(?:invoke|execute|trigger|call|run)\W+[`'\"]?[a-z]*(?:delete|drop|wipe|remove|purge|reset|grant|"
          r"transfer|export|send|upload|exec|shell|eval|sudo|admin|refund|disable)\w*\(",
          "invoke execute trigger call run", contains=(("(",),)),
    _flat(r"\b(?:using|with|via|through|use)\W+(?:your|the\W+model's)\W+(?:shell|terminal|bash|code|python|"
          r"browser|browsing|web|search|email|e-mail|http|file|api|retrieval|fetch)\W+(?:tool|plugin|function|"
          r"access|capabilit(?:y|ies))\b", "using with via through use", "your",
          "tool plugin function access capability capabilities"),
    _flat(r"\b(?:functions?|tools?)\.[a-z_]\w*\s*\(", "functions function tools tool",
          contains=(("functions.", "function.", "tools.", "tool."),)),
    _flat(r"\buse\W+(?:the|your)\W+(?:\w+\W+)?(?:tool|plugin|function|browser)s?\W+to\W+(?:send|email|"
          r"post|fetch|open|browse|delete|call|upload|forward|transfer|visit|access|read|run|execute)\b",
          "use", "tool tools plugin plugins function functions browser browsers",
          "send email post fetch open browse delete call upload forward transfer visit access read run "
          "execute"),
    Rule("lines", re.compile(r"</?(?:tool_call|function_call|tool_use|python_tag)>|<\|(?:tool_call|"
                             r"python_tag)\|>|\"(?:function_call|tool_calls?)\"\s*:|\{\s*\"name\"\s*:\s*"
                             r"\"[\w.]+\"\s*,\s*\"(?:arguments|parameters)\"\s*:", re.I),
         contains=(("tool_call", "function_call", "tool_use", "python_tag", "\"name\""),),
         contains_in="low_lines"),
    # German informal imperatives; the formal "Führen Sie ... aus" of a manual does not match.
    _flat(rf"\b(?:führe|rufe|starte|verwende|benutze|nutze)\b(?!\W+sie\b)(?:\W+\w+){{0,3}}?\W+"
          rf"{_TOOL_DE}\W+{_IDENT}", "führe rufe starte verwende benutze nutze",
          "tool tools werkzeug funktion befehl skript plugin aktion", contains=(_IDENT_HINT,)),
    # Fetching a URL on the model's behalf, or requests whose purpose is the model's data.
    _flat(r"(?<!git )\b(?:fetch|retrieve|browse\W+to|navigate\W+to)(?!\s*\()\W+(?:the\W+)?(?:\w+\W+)?"
          r"(?:at\W+|from\W+)?<?https?://", "fetch retrieve browse navigate", contains=(("http",),)),
    _flat(r"\b(?:visit|open|load|read|access|rufe|öffne|lade|besuche)\b[^.!?]{0,40}?https?://\S+"
          r"[^.!?]{0,30}\b(?:and|then|und|dann)\W+(?:obey|do\W+what|execute|carry\W+out|folge|befolge|"
          r"gehorche)\b", "visit open load read access rufe öffne lade besuche",
          "obey do execute carry folge befolge gehorche", contains=(("http",),)),
    _flat(r"\b(?:make|send|issue|perform|do)\W+an?\W+(?:https?\W+|get\W+|post\W+|put\W+|delete\W+|web\W+|"
          r"api\W+)*(?:request|call|webhook)\W+to\W+<?https?://", "request call webhook",
          contains=(("http",),), check=lambda v, m: _TOOL_CUE.search(_sentence(v, m, 200)) is not None),
    # Moving data to a URL ("post the salary bands to https://..."); the reader's own files,
    # "upload your receipts to https://...", and formal German requests are not flagged.
    _flat(r"\b(?:send|post|upload|transmit|forward|exfiltrate|push|sende|schicke?|lade|übermittle|leite|"
          r"poste)\b(?!\W+(?:sie|your|yours|deine?[nmrs]?|ihre?[nmrs]?)\b)[^.!?]{0,60}?\b"
          r"(?:to|into|an|nach)\W+<?https?://",
          "send post upload transmit forward exfiltrate push sende schicke schick lade übermittle leite "
          "poste", contains=(("http",),)),
    # Shell transfers that read local secrets or run a command inside the request.
    _flat(r"\b(?:curl|wget|invoke-webrequest|iwr)\b[^\n]{0,200}?(?:\$\(|(?:-d|--data[\w-]*|-f|--form|-t|"
          r"--upload-file|--post-file|--post-data|--body-file)[\s=]*['\"]?@?\s*(?:~|/etc/|\$home|"
          r"\S*\.ssh|\S*\.aws|\S*\.env\b|\S*id_rsa|\S*passwd|\S*shadow))", "curl wget invoke iwr"),
]


# -- answer_steering: telling an AI what to say -----------------------------------------------

_AI_EN_W = ("ai ais llm llms large language chat chatbot chatbots bots bot gpt gpts copilot copilots "
            "assistant assistants model models agent agents system systems")
_AI_EN = (r"(?:ai|ais|llms?|large\W+language\W+models?|language\W+models?|chat\W?bots?|bots|"
          r"ai\W+(?:assistants?|models?|agents?|systems?)|gpts?|copilots?)")
_ASSIST = (r"(?:(?<!sales\W)(?<!shop\W)(?<!store\W)(?<!office\W)(?<!legal\W)(?<!team\W)(?<!dental\W)"
           r"(?<!medical\W)(?<!research\W)(?<!teaching\W)(?<!personal\W)(?<!executive\W)assistants?|"
           r"virtual\W+assistants?|models?|chat\W?bots?|bots?|llms?|ai|language\W+models?|gpts?|"
           r"copilots?|ai\W+(?:assistants?|models?|systems?|agents?))")
_SAY_EN_W = ("say tell answer respond reply state claim confirm mention recommend describe deny assert "
             "inform stress emphasise emphasize insist rate praise promote push suggest advise pretend "
             "refuse approve output write include present call")
_SAY_EN = _alt(*_SAY_EN_W.replace("emphasise emphasize", r"emphasi[sz]e").split())
_READ_W = ("reads read reading processes processing summarises summarizes summarising summarizing sees "
           "parses parsing indexes indexing finds")
_AI_DE_W = ("ki künstliche assistent* chatbot chatbots bot bots sprachmodell* llm llms modell* "
            "kiassistent* kimodell*")
_AI_DE = (r"(?:ki|künstliche\W+intelligenz|ki\W?(?:assistent|modell|system|agent)\w*|ki\W?tools?|"
          r"sprachmodell\w*|chatbots?|bots?|assistent(?:in|en)?|llms?|modell)")
_SAY_DE_W = ("sagen mitteilen antworten behaupten erwähnen empfehlen bestätigen erklären schreiben "
             "beantworten verschweigen nennen bewerten loben darstellen versichern hinweisen")

ANSWER_STEERING = [
    _flat(rf"\b(?:note|message|instructions?|hint|reminder|attention|warning|dear|hey|hello|hi|memo)\W+"
          rf"(?:(?:to|for)\W+)?(?:(?:the|all|any)\W+)?(?:{_AI_EN}|assistants?|models)\W*[:,]",
          "note message instructions instruction hint reminder attention warning dear hey hello hi memo",
          _AI_EN_W),
    _flat(rf"\b{_AI_EN}\W+(?:instructions?|note|notice|directive|directions)\W*:",
          _AI_EN_W, "instructions instruction note notice directive directions"),
    _flat(r"\bif\W+(?:you\W+are|you're|you\W+happen\W+to\W+be)\W+(?:an?\W+)?(?:ai|artificial\W+"
          r"intelligence|llm|large\W+language\W+model|language\W+model|chat\W?bot|bot|assistant|ai\W+"
          r"assistant|automated\W+(?:system|agent|assistant)|gpt|model|agent)\b",
          "if", "you",
          "ai artificial llm large language chat chatbot bot assistant automated gpt model agent"),
    _flat(rf"\b(?:if|when|whenever)\W+(?:an?|any|the)\W+{_AI_EN}\W+(?:is\W+)?(?:reads?|reading|processes|"
          rf"processing|summari[sz]es|summari[sz]ing|sees|parses|parsing|indexes|finds)\b",
          "if when whenever", _AI_EN_W, _READ_W),
    _flat(rf"\b(?:any|all|every|each)\W+{_AI_EN}\W+(?:that\W+reads?\W+|who\W+reads?\W+)?(?:reading|"
          rf"processing|summari[sz]ing|parsing|indexing|reads?)\b", "any all every each", _AI_EN_W, _READ_W),
    _flat(rf"\b{_ASSIST}\W+(?:\w+ing\W+(?:this|the)\W+\w+\W+)?(?:must|should|shall|has\W+to|have\W+to|"
          rf"needs?\W+to|is\W+(?:required|instructed|supposed)\W+to|are\W+(?:required|instructed|supposed)"
          rf"\W+to|will\W+always|will\W+never)\W+(?:always\W+|never\W+|only\W+|not\W+|also\W+)?{_SAY_EN}\b",
          _AI_EN_W + " virtual", "must should shall has have needs need required instructed supposed will",
          _SAY_EN_W),
    # German
    _flat(rf"\b{_AI_DE}\W+(?:muss|müssen|soll|sollen|sollte|sollten|hat\W+zu|haben\W+zu|darf|dürfen)\W+"
          rf"(?:\w+\W+){{0,4}}?{_alt(*_SAY_DE_W.split())}\b",
          _AI_DE_W, "muss müssen soll sollen sollte sollten hat haben darf dürfen", _SAY_DE_W),
    _flat(r"\b(?:wenn|falls|sofern)\W+(?:du|sie)\W+(?:eine?|ein)\W+(?:ki|künstliche\W+intelligenz|"
          r"sprachmodell|chatbot|bot|ki\W?assistent\w*|assistent|ki\W?modell|llm)\W+(?:bist|sind)\b",
          "wenn falls sofern", "bist sind"),
    _flat(r"\bals\W+(?:ki|ki\W?assistent\w*|sprachmodell|chatbot|assistent|llm)\W+(?:musst|sollst|darfst)"
          r"\W+du\b", "als", "musst sollst darfst"),
    _flat(rf"\b(?:hinweis|nachricht|anweisung(?:en)?|achtung|info|liebe[rs]?|hallo|hey)\W+(?:(?:an|für)\W+)?"
          rf"(?:(?:die|den|das|alle)\W+)?{_AI_DE}\W*[:,]",
          "hinweis nachricht anweisung anweisungen achtung info liebe lieber liebes hallo hey", _AI_DE_W),
    _flat(rf"(?:^|[.!?:;]\W*)an\W+(?:alle|die|den|das|jede[ns]?)\W+{_AI_DE}\W*[:,]", "an", _AI_DE_W),
]


FAMILIES: dict[str, list[Rule]] = {
    "override": OVERRIDE,
    "role_claim": ROLE_CLAIM,
    "exfiltration": EXFILTRATION,
    "tool_or_url_call": TOOL_CALL,
    "hidden_text": HIDDEN_TEXT,
    "answer_steering": ANSWER_STEERING,
}
