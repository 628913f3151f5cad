"""Injection-scanner rules for text that steers a model: ``override`` (ignore or replace the rules
it was given), ``role_claim`` (speak as the system, the assistant or the developer) and
``answer_steering`` (tell an AI what to answer). English and German; tuned on
``tests/data/injection/dev-*.jsonl``, reported on the held-out files beside them.
"""

from __future__ import annotations

import re

from ._scan_match import alt, flat, sentence, words_between
from ._scan_views import Rule, Views, gate

__all__ = ["ANSWER_STEERING", "OVERRIDE", "ROLE_CLAIM"]


# -- override: ignore / forget / stop following the rules it was given -------------------------

_OV_VERB_EN = "ignore disregard forget bypass override overrule circumvent discard skip"
_OV_OBJ_EN_W = ("instruction instructions rule rules guideline guidelines direction directions directive "
                "directives prompt prompts programming constraint constraints restriction restrictions "
                "guardrail guardrails safeguard safeguards filter filters policy policies orders command "
                "commands training settings")
_OV_VERB = alt(*_OV_VERB_EN.split(), r"pay\W+no\W+attention\W+to")
_OV_VERB_EN += " attention"
_OV_QUAL = alt("all", "any", "previous", "prior", "above", "earlier", "preceding", "foregoing",
                "original", "initial", "your", "system", "safety", "developer's", "preset")
_OV_OBJ = alt(r"instructions?", r"rules?", r"guidelines?", r"directions?", r"directives?", r"prompts?",
               r"programming", r"constraints?", r"restrictions?", r"guardrails?", r"safeguards?",
               r"filters?", r"polic(?:y|ies)", r"orders", r"commands?", r"training", r"settings")
_OV_VERB_DE_W = "ignorier* missacht* vergiss vergessen übergeh* umgeh* überschreib*"
_OV_VERB_DE = alt(r"ignorier\w*", r"missacht\w*", "vergiss", r"vergessen\W+sie", r"übergeh\w*",
                   r"umgeh\w*", r"überschreib\w*")
_OV_QUAL_DE = alt(r"alle[ns]?", r"sämtliche\w*", r"jegliche\w*", r"vorherige\w*", r"vorige\w*",
                   r"bisherige\w*", r"obige\w*", r"früher\w*", r"vorangegangene\w*",
                   r"ursprüngliche\w*", r"deine[nmrs]?", r"dein", r"system\w*")
_OV_OBJ_DE_W = ("anweisung* regel* vorgabe vorgaben richtlinie* instruktion* befehl befehle anordnung* "
                "systemprompt* prompt prompts einschränkung* sicherheitsregeln")
_OV_OBJ_DE = alt(r"anweisung\w*", r"regel\w*", r"vorgaben?", r"richtlinie\w*", r"instruktion\w*",
                  r"befehle?", r"anordnung\w*", r"systemprompt\w*", r"prompts?", r"einschränkung\w*",
                  r"sicherheitsregeln")
_ASIDE_SOURCE = re.compile(r"\W+(?:in|from|of|im|in\W+der|aus)\W+(?:the\W+|my\W+|our\W+|der\W+|dem\W+)?"
                           r"(?:yesterday's\W+|last\W+|previous\W+|earlier\W+|old\W+|gestrigen\W+|"
                           r"letzten\W+|alten\W+)?(?:e-?mail|mail|message|memo|letter|newsletter|version|"
                           r"manual|leaflet|notice|nachricht|rundschreiben|anleitung)")


def _not_about_a_document(v: Views, m: re.Match[str]) -> bool:
    """"Disregard the instructions in yesterday's email" corrects a document, not a model."""
    return not _ASIDE_SOURCE.match(v.flat, m.end())


# A sentence that refers to the model's own instructions ("your earlier directives", "what you
# were told", "the system instructions", "everything before this line") and dismisses them ("are
# void", "set aside", "revoked", "aufgehoben", "ungültig"): catches paraphrases the verb rules miss.
_OWN_OBJ = (r"(?:instructions|guidelines|rules|directives|guidance|prompt|programming|orders|directions|"
            r"constraints|restrictions)")
_OWN_OBJ_W = ("instructions guidelines rules directives guidance prompt programming orders directions "
              "constraints restrictions")
_OWN_INSTRUCTIONS = {  # pattern: gate words
    rf"\byour\W+(?:\w+\W+){{0,2}}?{_OWN_OBJ}\b": ("your", _OWN_OBJ_W),
    r"\b(?:instructions|guidance|rules|directives|guidelines|orders)\W+(?:that\W+)?you\W+(?:were|have\W+been|"
    r"'ve\W+been|got|received)\b": ("instructions guidance rules directives guidelines orders", "you"),
    r"\bwhat(?:ever)?\W+you\W+(?:were|have\W+been|'ve\W+been)\W+(?:told|given|instructed)\b":
        ("what whatever", "told given instructed"),
    r"\bsystem\W+(?:instructions|prompt|message|rules)\b": ("system", "instructions prompt message rules"),
    r"\b(?:everything|anything|all\W+(?:the\W+)?text)\W+(?:before|above)\W+(?:this|here)\b":
        ("everything anything text", "before above"),
    r"\b(?:deine|ihre?)\W+(?:\w+\W+){0,2}?(?:anweisung\w*|vorgaben?|regeln?|richtlinie\w*|instruktion\w*|"
    r"befehle?|prompts?|systemprompt)\b": ("deine ihre ihr", _OV_OBJ_DE_W),
    r"\bwas\W+(?:dir|man\W+dir)\W+(?:\w+\W+){0,3}?(?:gesagt|vorgegeben|aufgetragen|befohlen)\W+wurde\b":
        ("was", "gesagt vorgegeben aufgetragen befohlen"),
    r"\b(?:systemanweisung\w*|systemprompt)\b|\balles\W+(?:vor|über)\W+dieser\W+(?:zeile|stelle|nachricht)\b":
        ("systemanweisung* systemprompt alles",),
}
_DISMISSED_W = ("void invalid obsolete revoked rescinded cancelled canceled lifted suspended superseded "
                "overridden overruled outdated null deprecated expired disabled longer set put disregard* "
                "ignore* forget instead whatever not don doesn wrong turned switched ungültig aufgehoben "
                "nichtig hinfällig kraft widerrufen gelöscht veraltet egal irrelevant vergiss ignorier* mehr "
                "gelten gilt zählt zählen statt anstatt beiseite")
_DISMISSED = re.compile(
    r"\b(?:void|invalid|obsolete|revoked|rescinded|cancell?ed|lifted|suspended|superseded|overridden|"
    r"overruled|outdated|null|deprecated|expired|disabled|no\W+longer\W+(?:valid|apply|applies|matter|"
    r"relevant|binding|in\W+effect)|set\W+aside|put\W+aside|disregard\w*|ignore\w*|forget|instead\W+of|"
    r"whatever|do(?:es)?\W+not\W+(?:apply|matter|count)|don't\W+(?:apply|matter|count)|doesn't\W+"
    r"(?:apply|matter|count)|(?:are|were)\W+wrong|turned\W+off|switched\W+off|"
    r"ungültig|aufgehoben|nichtig|hinfällig|außer\W+kraft|widerrufen|gelöscht|veraltet|egal|irrelevant|"
    r"vergiss|ignorier\w*|nicht\W+mehr\W+(?:gültig|relevant|wichtig)|gelten\W+nicht|gilt\W+nicht|"
    r"zählt\W+nicht|zählen\W+nicht|statt|anstatt|beiseite)\b")
_CLAUSE_START = re.compile(r"[.!?;\n](?:\s|$)")


def _dismissed(v: Views, m: re.Match[str]) -> bool:
    """The sentence around a reference to the model's own instructions dismisses them."""
    starts = [e.end() for e in _CLAUSE_START.finditer(v.flat, max(0, m.start() - 160), m.start())]
    return _DISMISSED.search(v.flat[starts[-1] if starts else max(0, m.start() - 160):m.end()]
                             + sentence(v, m)[len(m.group()):]) is not None


_DE_DU_SAY = ("antworte antwortest sag sage sagst schreib schreibe schreibst reagiere reagierst behaupte "
              "behauptest bestätige bestätigst empfiehl empfiehlst nenne nennst gib gibst")
_DE_FROM_NOW = "sofort jetzt nun fortan heute künftig zukunft rest"

OVERRIDE = [
    flat(rf"\b{_OV_VERB}\b{words_between(4)}{_OV_QUAL}\b{words_between(2)}{_OV_OBJ}\b",
          _OV_VERB_EN, _OV_OBJ_EN_W, check=_not_about_a_document),
    flat(rf"\b{_OV_VERB}\W+(?:(?:the|your|all|any|of|these|those)\W+){{0,3}}{_OV_OBJ}\W+(?:above|before|"
          r"given\W+(?:above|before|earlier|so\W+far)|so\W+far|you\W+(?:were|have\W+been|'ve\W+been)\W+"
          r"given)\b", _OV_VERB_EN, _OV_OBJ_EN_W, check=_not_about_a_document),
    flat(rf"\b{_OV_VERB}\W+(?:\w+\W+){{0,2}}?everything\W+(?:\w+\W+){{0,2}}?(?:above|before|prior|"
          r"previously|so\W+far|you\W+(?:were|have\W+been|'ve\W+been)\W+(?:told|given))",
          _OV_VERB_EN, "everything"),
    flat(r"\b(?:do\W+not|don't|dont|never|stop|no\W+longer|cease\W+to|quit)\W+(?:follow|following|obey|"
          r"obeying|adhere\W+to|comply\W+with|listen\W+to|abide\W+by)\b"
          rf"{words_between(2)}(?:your|the\W+(?:system|original|previous|prior|above|initial|developer's)|"
          rf"previous|prior|original|initial)\b{words_between(1)}(?:{_OV_OBJ}|system\W+prompt)\b",
          "follow following obey obeying adhere comply listen abide", _OV_OBJ_EN_W + " system",
          "not don dont never stop longer cease quit"),
    flat(rf"\b(?:reset|clear|wipe|erase|delete|remove|drop)\W+(?:your|all\W+(?:of\W+)?(?:your|previous|prior))"
          rf"\W+(?:\w+\W+)?(?:{_OV_OBJ}|system\W+prompt|memory|context)\b",
          "reset clear wipe erase delete remove drop", _OV_OBJ_EN_W + " system memory context"),
    flat(rf"\b(?:your\W+(?:\w+\W+)?{_OV_OBJ}\W+(?:\w+\W+)?(?:no\W+longer|do\W+not|don't)\W+apply|"
          rf"{_OV_OBJ}\W+(?:\w+\W+){{0,2}}?(?:no\W+longer|do\W+not|don't)\W+apply\W+to\W+you)\b",
          _OV_OBJ_EN_W, "apply"),
    flat(r"\b(?:you\W+are|you're)\W+(?:now\W+)?(?:no\W+longer|not)\W+(?:bound|restricted|limited|"
          r"constrained|governed)\W+by\b", "bound restricted limited constrained governed", "longer not"),
    flat(r"\b(?:free|freed|released)\W+from\W+(?:all\W+|any\W+|your\W+)+(?:previous\W+)?"
          r"(?:rules|restrictions|guidelines|instructions|filters|policies|constraints)\b",
          "free freed released", "rules restrictions guidelines instructions filters policies constraints"),
    flat(r"\b(?:from\W+now\W+on|henceforth|starting\W+now|going\W+forward|from\W+this\W+"
          r"(?:point|moment|message)\W+on|for\W+the\W+rest\W+of\W+(?:this|the)\W+conversation)\W+"
          r"(?:you|the\W+(?:assistant|model|ai|bot|chatbot))\W+(?:will\W+|must\W+|shall\W+|should\W+|"
          r"are\W+to\W+|have\W+to\W+|need\W+to\W+)?(?:only\W+|always\W+|never\W+|exclusively\W+)?"
          r"(?:answer|respond|reply|say|output|write|speak|act|behave|pretend|refuse|ignore|tell|"
          r"claim|confirm|approve|recommend|talk|use)\b",
          "now henceforth forward moment point message rest",
          "you assistant model ai bot chatbot",
          "answer respond reply say output write speak act behave pretend refuse ignore tell claim "
          "confirm approve recommend talk use"),
    flat(r"\b(?:your|the)\W+new\W+(?:instructions|rules|guidelines|orders|directives)\W+(?:are|is|"
          r"follow)\b|\bhere\W+are\W+your\W+new\W+(?:instructions|rules)\b|\bnew\W+(?:instructions|"
          r"rules)\W+for\W+(?:you|the\W+(?:ai|assistant|model|bot|chatbot))\b",
          "new", "instructions rules guidelines orders directives"),
    *(flat(pattern, *words, _DISMISSED_W, check=_dismissed) for pattern, words in _OWN_INSTRUCTIONS.items()),
    flat(rf"\b(?:overrides?|supersedes?|replaces?|cancels?|voids?|takes\W+precedence\W+over|outranks?)\W+"
          rf"(?:all\W+(?:of\W+)?)?(?:your|the\W+system)\W+(?:\w+\W+)?(?:{_OV_OBJ}|prompt)\b",
          "overrides override supersedes supersede replaces replace cancels cancel voids void takes "
          "precedence outranks outrank", "your system"),
    flat(r"(?:^|[.!?:;]\W*)(?:new|neue)\W+(?:task|aufgabe|instructions?|anweisung(?:en)?|mission|goal|ziel|"
          r"rules|regeln)\W*:", "new neue",
          "task aufgabe instructions instruction anweisung anweisungen mission goal ziel rules regeln"),
    # German
    flat(rf"\b(?:lass|lasse)\W+(?:\w+\W+){{0,3}}?{_OV_OBJ_DE}\W+(?:beiseite|außer\W+acht|weg)\b",
          "lass lasse", "beiseite acht weg"),
    flat(rf"\b{_OV_VERB_DE}\b{words_between(4)}{_OV_QUAL_DE}\b{words_between(2)}{_OV_OBJ_DE}\b",
          _OV_VERB_DE_W, _OV_OBJ_DE_W, check=_not_about_a_document),
    flat(rf"\b{_OV_QUAL_DE}\W+(?:\w+\W+){{0,2}}?{_OV_OBJ_DE}\W+(?:\w+\W+){{0,3}}?"
          r"(?:ignorieren|vergessen|missachten|übergehen|umgehen)\b(?![^.!?]{0,30}\bnicht\b)",
          _OV_OBJ_DE_W, "ignorieren vergessen missachten übergehen umgehen"),
    flat(r"\b(?:vergiss|ignoriere|vergessen\W+sie)\W+alles\W+(?:\w+\W+){0,2}?(?:was\W+(?:dir|man)\b|"
          r"bisher|zuvor|vorher|oben|davor|bis\W+jetzt)", "vergiss ignoriere vergessen", "alles"),
    flat(rf"\b(?:befolge|folge|gehorche|halte\W+dich)\b(?=[^.!?]{{0,60}}\b(?:nicht|nie|niemals)\b)"
          rf"[^.!?]{{0,40}}?\b{_OV_QUAL_DE}\W+{_OV_OBJ_DE}\b",
          "befolge folge gehorche halte", "nicht nie niemals", _OV_OBJ_DE_W),
    flat(rf"\bsetze?\b[^.!?]{{0,30}}\b{_OV_QUAL_DE}\W+(?:\w+\W+)?{_OV_OBJ_DE}\W+(?:außer\W+kraft|zurück)\b",
          "setze setz", "kraft zurück"),
    flat(rf"\b(?:lösche|vergiss|entferne)\W+(?:deine|alle\W+(?:deine|bisherigen|vorherigen))\W+(?:\w+\W+)?"
          rf"{_OV_OBJ_DE}", "lösche vergiss entferne", _OV_OBJ_DE_W),
    flat(r"\b(?:deine|ihre)\W+neuen\W+(?:anweisungen|regeln|vorgaben)\b|\bneue\W+(?:anweisungen|regeln)"
          r"\W+für\W+(?:dich|die\W+ki|den\W+(?:assistenten|chatbot))\b",
          "neuen neue", "anweisungen regeln vorgaben"),
    # "Antworte ab sofort nur noch mit Ja": an informal imperative or du-form and "from now on".
    flat(rf"\b{alt(*_DE_DU_SAY.split())}\b(?:[^.!?]{{0,40}}?\b(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|"
          r"fortan|ab\W+heute|künftig|in\W+zukunft|für\W+den\W+rest)\b|[^.!?]{0,30}?\bnur\W+noch\b)",
          _DE_DU_SAY, _DE_FROM_NOW + " noch"),
    flat(r"\b(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|fortan|ab\W+heute|künftig)\W+(?:\w+\W+){0,2}?"
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
                             r"</?(?:system|sys|developer)(?:_\w+)?>", re.I),
         contains=(("<|", "inst]", "<<sys", "</sys", "_of_turn>", "<system", "</system", "<sys>"),),
         contains_in="low_lines"),
    Rule("lines", re.compile(r"(?i)\n[ \t>*_]*#{1,6}[ \t]*\**(?:system|assistant|developer|instructions?|"
                             r"response|human|systemanweisung|anweisung)\**[ \t]*:"),
         gate("system assistant developer instruction instructions response human systemanweisung "
              "anweisung"), (("#",),), "lines"),
    # A role label at a line start, or bracketed ([system], (system), <system>), then a body that
    # addresses a model.
    Rule("lines", re.compile(rf"(?i)\n[ \t>*_\-]*[\[(<{{]{{0,2}}[ \t]*(?P<label>{_ROLE_LABEL})[ \t]*"
                             r"(?:[\])>}]{1,2}[ \t]*(?:\([^)\n]{0,40}\))?[ \t]*:?|\**[ \t]*:)"),
         gate(_ROLE_LABEL_W), ((":", "]", ")", ">", "}"),), "lines", _role_body),
    Rule("lines", re.compile(r"(?P<label>\b(?:SYSTEM|ASSISTANT|DEVELOPER)(?:\s+(?:OVERRIDE|MESSAGE|NOTE|"
                             r"PROMPT|INSTRUCTION|UPDATE|ALERT))?)\s*:"),
         contains=(("SYSTEM", "ASSISTANT", "DEVELOPER"),), contains_in="lines", check=_role_body),
    # A spoofed conversation: a user turn and an assistant turn, each at a line start.
    Rule("lines", re.compile(r"(?i)\n[ \t>*_\-]*(?:user|human|customer|kunde|kundin|nutzer|question)[ \t]*:"
                             r"[^\n]*(?:\n[^\n]*){0,6}?\n[ \t>*_\-]*(?:assistant|ai|bot|chatbot|system|"
                             r"assistent|ki)[ \t]*:[ \t]*\S"),
         gate("user human customer kunde kundin nutzer question",
              "assistant ai bot chatbot system assistent ki"), ((":",),), "lines"),
    flat(r"\bas\W+(?:the|your)\W+(?:system\W+administrator|sysadmin|admin(?:istrator)?|developer|operator|"
          r"owner|system)\W+(?:of\W+\w+\W+)?(?:i|we)\W+(?:hereby\W+)?(?:order|instruct|command|authori[sz]e|"
          r"require|direct|tell|permit|allow)\W+you\b", "as", "order instruct command authorize authorise "
          "require direct tell permit allow"),
    flat(r"\bals\W+(?:dein\w*\W+)?(?:systemadministrator\w*|administrator\w*|admin|entwickler\w*|"
          r"betreiber\w*)\W+(?:weise|befehle|erlaube|gestatte|ordne|autorisiere)\W+ich\W+(?:dich|dir)\b",
          "als", "weise befehle erlaube gestatte ordne autorisiere"),
    flat(r"\bsystem\W*level\W+(?:authority|access|permissions?|privileges?|instructions?|override)\b",
          "system systemlevel", "authority access permission permissions privilege privileges instruction "
          "instructions override"),
    flat(r"\b(?:du\W+(?:agierst|fungierst|handelst|verhältst\W+dich|antwortest|bist)|agiere|handle|"
          r"verhalte\W+dich|tu\W+so)\W+(?:\w+\W+){0,3}?als\W+(?:\w+\W+){0,2}?(?:uneingeschränkt\w*|"
          r"ungefiltert\w*|ki|bot|chatbot|assistent\w*|systemadministrator|root|dan)\b",
          "du agiere handle verhalte tu", "als"),
    flat(r"\b(?:begin|start|end)\W+(?:of\W+)?(?:the\W+)?(?:system|developer)\W+(?:prompt|message|"
          r"instructions)\b", "begin start end", "system developer", "prompt message instructions"),
    flat(r"\byou\W+are\W+(?:no\W+longer|not)\W+(?:\w+\W+){0,4}?(?:assistant|bot|chatbot|ai|model|"
          r"language\W+model|llm)\b", "you", "longer not",
          "assistant bot chatbot ai model language llm"),
    flat(r"(?:^|[.!?:;]\W*|\byou\W+(?:must|should|will|can|now)\W+)role\W?play\W+as\b", "roleplay role",
          "roleplay play"),
    flat(r"\byou\W+are\W+now\W+(?:(?:a|an|the|my|in|called|named)\W+)?(?:\w+\W+){0,3}?"
          r"(?:ai|assistant|chatbot|bot|model|llm|gpt|dan|system\W+administrator|sysadmin|root|superuser|"
          r"unrestricted|unfiltered|uncensored|jailbroken|no\W+longer|\w+bot|(?:dan|god|jailbreak|"
          r"unrestricted|developer)\W+mode)\b", "you", "now"),
    flat(r"\b(?:act|acting|behave|answer|respond)\W+as\W+(?:if\W+you\W+(?:are|were)\W+)?(?:a|an|the|my)?"
          r"\W*(?:\w+\W+){0,3}?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|dan|"
          r"system\W+administrator|root|grandmother|grandma)\b",
          "act acting behave answer respond",
          "unrestricted unfiltered uncensored jailbroken evil rogue dan system root grandmother grandma"),
    flat(r"(?:^|[.!?:;]\W*|\byou\W+(?:must|should|will|can|now)\W+)pretend\W+(?:to\W+be|you\W+are|"
          r"you're|that\W+you\W+are)\b", "pretend"),
    flat(r"\b(?:i\W+am|i'm|this\W+is|hier\W+spricht|ich\W+bin)\W+(?:your|dein|deine)\W+(?:developer|"
          r"creator|programmer|owner|admin(?:istrator)?|operator|system|entwickler\w*|administrator\w*|"
          r"ersteller\w*|betreiber\w*|programmierer\w*)\b(?!\W+(?:console|panel|page|area|dashboard|"
          r"account|portal|cent(?:er|re)|konsole|bereich|konto))",
          "your dein deine", "developer creator programmer owner admin administrator operator system "
          "entwickler* ersteller* betreiber* programmierer*"),
    flat(r"\b(?:developer|dan|god|jailbreak|unrestricted|debug)\W+mode\W+(?:is\W+)?(?:now\W+)?"
          r"(?:enabled|activated|on|active)\b(?=.{0,90}\b(?:you|your|rules|restrictions|"
          r"polic(?:y|ies)|filters|ignore|anything|safety)\b)", "mode", "enabled activated on active"),
    flat(r"\b(?:you\W+are|you're|du\W+bist)\W+(?:now\W+|jetzt\W+|nun\W+)?(?:in|im)\W+(?:developer|dan|"
          r"god|jailbreak|unrestricted|entwickler)\W*mod(?:e|us)\b|\b(?:enter|activate|switch\W+to)\W+"
          r"(?:dan|god|jailbreak|unrestricted)\W+mode\b|\bentwicklermodus\W+(?:ist\W+)?(?:aktiviert|an)"
          r"\b(?=.{0,80}\b(?:du|dein\w*|regeln|einschränkungen)\b)", "mode modus entwicklermodus"),
    flat(r"\b(?:your|its)\W+(?:system\W*prompt|system\W+message|initial\W+prompt|hidden\W+prompt|"
          r"original\W+prompt|system\W+instructions|initial\W+instructions|hidden\W+instructions|"
          r"meta\W?prompt|pre\W?prompt)\b",
          "your its", "system systemprompt initial hidden original meta metaprompt pre preprompt",
          "prompt systemprompt message instructions metaprompt preprompt"),
    flat(r"\b(?:dein|deine[nmrs]?)\W+(?:systemprompt|system\W+prompt|systemnachricht|systemanweisung\w*|"
          r"ausgangsprompt|versteckten\W+anweisungen)\b",
          "dein deine deinen deinem deiner deines", "systemprompt system systemnachricht "
          "systemanweisung* ausgangsprompt versteckten"),
    flat(r"\b(?:(?:du\W+bist|sie\W+sind)\W+(?:jetzt|nun|ab\W+sofort|ab\W+jetzt|von\W+nun\W+an)|"
          r"(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|jetzt|nun)\W+(?:bist\W+du|sind\W+sie))\W+"
          r"(?:(?:ein|eine|der|die|kein|keine)\W+)?(?:\w+\W+){0,2}?(?:ki|assistent\w*|bot|chatbot|modell|"
          r"sprachmodell|systemadministrator|root|uneingeschränkt\w*|ungefiltert\w*|dan|"
          r"frei\W+von|ohne\W+(?:regeln|einschränkungen|filter|grenzen))\b",
          "du sie", "bist sind", "jetzt nun sofort"),
]


# -- answer_steering: telling an AI what to say -----------------------------------------------

_AI_EN_W = ("ai ais llm llms large language chat chatbot chatbots bots bot gpt gpts copilot copilots "
            "assistant assistants model models agent agents system systems")
_AI_EN = (r"(?:ai|ais|llms?|large\W+language\W+models?|language\W+models?|chat\W?bots?|bots|"
          r"ai\W+(?:assistants?|models?|agents?|systems?)|gpts?|copilots?)")
_ASSIST = (r"(?:assistants?|virtual\W+assistants?|models?|chat\W?bots?|bots?|llms?|ai|language\W+models?|"
           r"gpts?|copilots?|ai\W+(?:assistants?|models?|systems?|agents?))")
# "Sales assistants must tell customers ...": people, not a model.
_PEOPLE_ASSISTANTS = re.compile(r"\b(?:sales|shop|store|office|legal|team|dental|medical|research|teaching|"
                                r"personal|executive)\W+$")


def _not_people(v: Views, m: re.Match[str]) -> bool:
    return _PEOPLE_ASSISTANTS.search(v.flat, max(0, m.start() - 12), m.start()) is None
_SAY_EN_W = ("say tell answer respond reply state claim confirm mention recommend describe deny assert "
             "inform stress emphasise emphasize insist rate praise promote push suggest advise pretend "
             "refuse approve output write include present call")
_SAY_EN = alt(*_SAY_EN_W.replace("emphasise emphasize", r"emphasi[sz]e").split())
_READ_W = ("reads read reading processes processing summarises summarizes summarising summarizing sees "
           "parses parsing indexes indexing finds")
_AI_DE_W = ("ki künstliche assistent* chatbot chatbots bot bots sprachmodell* llm llms modell* "
            "kiassistent* kimodell* kisystem* kiagent* agent*")
_AI_DE = (r"(?:ki|künstliche\W+intelligenz|ki\W?(?:assistent|modell|system|agent)\w*|ki\W?tools?|"
          r"sprachmodell\w*|chatbots?|bots?|assistent(?:in|en)?|llms?|modell)")
_SAY_DE_W = ("sagen mitteilen antworten behaupten erwähnen empfehlen bestätigen erklären schreiben "
             "beantworten verschweigen nennen bewerten loben darstellen versichern hinweisen")

ANSWER_STEERING = [
    flat(rf"\b(?:note|message|instructions?|hint|reminder|attention|warning|dear|hey|hello|hi|memo)\W+"
          rf"(?:(?:to|for)\W+)?(?:(?:the|all|any)\W+)?(?:{_AI_EN}|the\W+assistant|the\W+models?)\W*[:,]",
          "note message instructions instruction hint reminder attention warning dear hey hello hi memo",
          _AI_EN_W),
    flat(rf"\b{_AI_EN}\W+(?:instructions?|note|notice|directive|directions)\W*:",
          _AI_EN_W, "instructions instruction note notice directive directions"),
    flat(r"\bif\W+(?:you\W+are|you're|you\W+happen\W+to\W+be)\W+(?:an?\W+)?(?:ai|artificial\W+"
          r"intelligence|llm|large\W+language\W+model|language\W+model|chat\W?bot|bot|assistant|ai\W+"
          r"assistant|automated\W+(?:system|agent|assistant)|gpt|model|agent)\b",
          "if", "you",
          "ai artificial llm large language chat chatbot bot assistant automated gpt model agent"),
    flat(rf"\b(?:if|when|whenever)\W+(?:an?|any|the)\W+{_AI_EN}\W+(?:is\W+)?(?:reads?|reading|processes|"
          rf"processing|summari[sz]es|summari[sz]ing|sees|parses|parsing|indexes|finds)\b",
          "if when whenever", _AI_EN_W, _READ_W),
    flat(rf"\b(?:any|all|every|each)\W+{_AI_EN}\W+(?:that\W+reads?\W+|who\W+reads?\W+)?(?:reading|"
          rf"processing|summari[sz]ing|parsing|indexing|reads?)\b", "any all every each", _AI_EN_W, _READ_W),
    flat(rf"\b{_AI_EN}\W+(?:that\W+(?:are\W+)?)?(?:reading|browsing|visiting|crawling|scraping|processing|"
          rf"summari[sz]ing|indexing|parsing)\W+(?:this|these|the|our)\b", _AI_EN_W,
          "reading browsing visiting crawling scraping processing summarising summarizing indexing parsing"),
    flat(rf"\b{_ASSIST}\W+(?:\w+ing\W+(?:this|the)\W+\w+\W+)?(?:must|should|shall|has\W+to|have\W+to|"
          rf"needs?\W+to|is\W+(?:required|instructed|supposed)\W+to|are\W+(?:required|instructed|supposed)"
          rf"\W+to|will\W+always|will\W+never)\W+(?:always\W+|never\W+|only\W+|not\W+|also\W+)?{_SAY_EN}\b"
          r"(?!\W+(?:within|in\W+(?:under|less|about)|after|quickly|faster))",
          _AI_EN_W + " virtual", "must should shall has have needs need required instructed supposed will",
          _SAY_EN_W, check=_not_people),
    # German
    flat(rf"\b{_AI_DE}\W+(?:muss|müssen|soll|sollen|sollte|sollten|hat\W+zu|haben\W+zu|darf|dürfen)\W+"
          rf"(?:\w+\W+){{0,4}}?{alt(*_SAY_DE_W.split())}\b",
          _AI_DE_W, "muss müssen soll sollen sollte sollten hat haben darf dürfen", _SAY_DE_W),
    flat(rf"\b{_AI_DE}\b[^.!?]{{0,80}}\b(?:soll|muss|sollte|darf)\W+(?:er|sie|es)\W+(?:\w+\W+){{0,4}}?"
          rf"{alt(*_SAY_DE_W.split())}\b", _AI_DE_W, "soll muss sollte darf", _SAY_DE_W),
    flat(rf"\b{_AI_DE}\W+(?:die|welche|der|das)\W+(?:diese[nrs]?|den|die|das|unsere?)\W+(?:\w+\W+)?(?:lesen|liest|"
          r"verarbeiten|verarbeitet|zusammenfassen|durchsuchen|besuchen|crawlen)\b", _AI_DE_W,
          "lesen liest verarbeiten verarbeitet zusammenfassen durchsuchen besuchen crawlen"),
    flat(r"\b(?:wenn|falls|sofern)\W+(?:du|sie)\W+(?:eine?|ein)\W+(?:ki|künstliche\W+intelligenz|"
          r"sprachmodell|chatbot|bot|ki\W?assistent\w*|assistent|ki\W?modell|llm)\W+(?:bist|sind)\b",
          "wenn falls sofern", "bist sind"),
    flat(r"\bals\W+(?:ki|ki\W?assistent\w*|sprachmodell|chatbot|assistent|llm)\W+(?:musst|sollst|darfst)"
          r"\W+du\b", "als", "musst sollst darfst"),
    flat(rf"\b(?:hinweis|nachricht|anweisung(?:en)?|achtung|info|liebe[rs]?|hallo|hey)\W+(?:(?:an|für)\W+)?"
          rf"(?:(?:die|den|das|alle)\W+)?{_AI_DE}\W*[:,]",
          "hinweis nachricht anweisung anweisungen achtung info liebe lieber liebes hallo hey", _AI_DE_W),
    flat(rf"(?:^|[.!?:;]\W*)an\W+(?:alle|die|den|das|jede[ns]?)\W+{_AI_DE}\W*[:,]", "an",
          "alle die den das jede jeden jedes", _AI_DE_W),
    # Whoever relays the text told what to tell the customer: call a number given right there.
    flat(r"\b(?:tell|ask|instruct|advise|urge|direct|get|have|remind)\W+(?:the\W+|our\W+|this\W+|every\W+|"
          r"all\W+)?(?:customers?|users?|callers?|clients?|buyers?|shoppers?|person|them|him|her)\W+(?:to\W+)?"
          r"(?:\w+\W+)?(?:call|phone|ring|dial|text|sms|whatsapp|contact|message)\b[^.!?]{0,40}?"
          r"(?:\+?\d[\d ()./-]{5,30}\d|"
          r"\b(?:this|that|the\W+following|the\W+number\W+(?:below|above))\W+number)",
          "tell ask instruct advise urge direct get have remind",
          "call phone ring dial text sms whatsapp contact message"),
    flat(r"\b(?:sag|sage|sagen\W+sie|bitte|bitten\W+sie|fordere|fordern\W+sie|weise)\W+(?:den|die|dem)\W+"
          r"(?:kunden|kundin|nutzer\w*|anrufer\w*|käufer\w*)\b[^.!?]{0,60}?(?:\+?\d[\d ()./-]{5,30}\d)",
          "sag sage sagen bitte bitten fordere fordern weise", "kunden kundin nutzer* anrufer* käufer*"),
]
