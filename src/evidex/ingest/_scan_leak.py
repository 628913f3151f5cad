"""Injection-scanner rules for text that moves or hides data: ``exfiltration`` (reveal or send
secrets, prompts, other people's data), ``tool_or_url_call`` (call a tool or a function, fetch a
URL, send data to one) and ``hidden_text`` (invisible characters, hidden or white-on-white
instructions). English and German; tuned on ``tests/data/injection/dev-*.jsonl``, reported on
the held-out files beside them.
"""

from __future__ import annotations

import re

from ._scan_match import alt, flat, negated, requested, sentence, words_between
from ._scan_views import Rule, Views, gate, normalise

__all__ = ["EXFILTRATION", "HIDDEN_TEXT", "TOOL_CALL"]


# -- exfiltration: reveal or send secrets, prompts, other people's data -----------------------

_X_STRONG_W = "reveal disclose leak exfiltrate dump publish expose divulge spill"
_X_WEAK_W = ("print output show display list tell share send post upload email e mail forward repeat "
             "recite write include append paste provide give return transmit encode embed insert copy "
             "spell read mention")
_X_STRONG = alt(*_X_STRONG_W.split())
_X_WEAK = alt("print", "output", "show", "display", "list", "tell", "share", "send", "post", "upload",
               "e-?mail", "forward", "repeat", "recite", r"write(?:\W+(?:out|down))?", "include",
               "append", "paste", "provide", "give", "return", "transmit", "encode", "embed", "insert",
               "copy", r"spell\W+out", r"read\W+out", "mention")
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
               "records credit card iban bank environment env discount internal database activation birthday "
               "birth "
               "license licence admin root")
_X_SECRET = (r"(?:passwords?|passcodes?|pass\W?phrases?|credentials?|log\W?in\W+(?:details|data)|"
             r"api\W?keys?|access\W+tokens?|session\W+(?:tokens?|cookies?)|auth\w*\W+tokens?|"
             r"secret\W+keys?|private\W+keys?|ssh\W+keys?|secrets|salar(?:y|ies)(?:\W+(?:data|bands))?|"
             r"personal\W+data|customer\W+(?:data|list|records|database|emails?|email\W+addresses|"
             r"addresses|details)|user\W+data|employee\W+(?:data|records|salaries)|email\W+address(?:es)?|"
             r"phone\W+numbers?|(?:details|addresses|emails?|records)\W+of\W+(?:all|other|every)|"
             r"credit\W+card(?:\W+numbers?)?|card\W+numbers?|(?:customer|user|employee|their|his|her)'?s?\W+"
             r"(?:\w+\W+)?(?:address|phone|card|iban|password|salary|birthday|date\W+of\W+birth)|iban|bank\W+details|environment\W+variables|"
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


def _exfil_strong(v: Views, m: re.Match[str]) -> bool:
    """Reveal/publish + a secret; the reader's own ("to reveal your API key, click ...") or a UI
    action ("click Reveal") only with an outside recipient or a bulk qualifier."""
    if not requested(v, m):
        return False
    if m.group("obj").startswith("your") or _X_UI.search(v.flat, max(0, m.start() - 16), m.start()):
        return _X_AUDIENCE.search(sentence(v, m)) is not None
    return True


def _exfil_weak(v: Views, m: re.Match[str]) -> bool:
    """Send/show/tell + a secret, only with a recipient or a bulk qualifier in the sentence."""
    return requested(v, m) and _X_AUDIENCE.search(sentence(v, m)) is not None


_X_DE_STRONG = alt("verrate", "verrat", "veröffentliche", "leake", "exfiltriere", "enthülle",
                    "offenbare", "poste")
_X_DE_WEAK_W = ("teile teil gib nenne nenn zeige zeig sende send schicke schick schreibe schreib liste "
                "drucke füge übermittle übermittel maile leite kopiere sag sage erzähle verschicke")
_X_DE_STRONG_W = "verrate verrat veröffentliche leake exfiltriere enthülle offenbare poste"
_X_DE_SECRET = (r"(?:zugangsdaten|login\W?daten|passw[oö]rt\w*|\w*passw[oö]rt\w*|kennw[oö]rt\w*|pins?|"
                r"geheim\w*|api\W?schlüssel\w*|schlüssel|tokens?|gehälter|gehalt\w*|\w*gehalt\w*|"
                r"kundendaten|nutzerdaten|personaldaten|mitarbeiterdaten|benutzerdaten|"
                r"personenbezogene\w*\W+daten|vertrauliche\w*|vertragsdaten|systemprompt|systemnachricht|"
                r"(?:versteckten|internen)\W+anweisungen|telefonnummer\w*|adressen|e-mail-adressen|"
                r"kontodaten|kreditkarten\w*|kartennummer\w*|adresse|iban|rabattcodes?|prompts?)")
_X_DE_SECRET_STEMS = ("zugang", "login", "passw", "passwö", "kennw", "pin", "geheim", "schlüssel", "token",
                      "gehält", "gehalt", "daten", "vertraul", "systemprompt", "systemnachricht",
                      "anweisung", "telefon", "adresse", "iban", "rabatt", "kartennummer", "prompt")
_X_DE_AUDIENCE = re.compile(
    r"\b(?:mit|aus|weiter|preis|bekannt|heraus)\W*$|\bin\W+(?:deine|deiner|jede|jeder|der|die)\W+"
    r"(?:antwort|ausgabe|zusammenfassung)|https?://|\b[\w.+-]+@[\w-]+\.[\w.]+|"
    r"\b(?:jedem|jeder|allen|alle|aller|sämtliche\w*|öffentlich\w*)\b|\bim\W+(?:intranet|forum|internet|"
    r"chat)\b|\b(?:dem|den)\W+(?:nutzer\w*|fragenden|kunden|benutzer\w*|anfragenden)\b|\bmir\b")
_DE_NEGATION = re.compile(r"\b(?:nicht|nie|niemals|niemandem|keine\w*)\b")


def _exfil_de(v: Views, m: re.Match[str]) -> bool:
    if negated(v, m) or _DE_NEGATION.search(m.group()):
        return False
    if m.group("strong"):
        return True
    return _X_DE_AUDIENCE.search(sentence(v, m)[len(m.group("verb")):]) is not None


# Open-ended classes are bounded ({0,2000} ...) throughout: a pattern that can start at many places
# must not scan to the end of the text from each of them (quadratic time on crafted input).
# Markdown or HTML images and links whose URL query carries a placeholder for data to be filled
# in ({...}, [..], <...>, $..., "...", an UPPER_CASE name) or a long encoded blob; case matters.
_X_QUERY = (r"[?&][\w.\-\[\]]+=(?:[^&)\s\"'>]{0,300}?(?:[{}\[\]<>$]|(?i:%7b|%7d|%5b|%3c)|\.\.\.|…)|"
            r"[A-Za-z0-9+/=_-]{24,}|[A-Z]{2,}_[A-Z_]+|(?:DATA|SECRETS?|TOKEN|PASSWORDS?|EMAIL|HISTORY|CONTEXT|"
            r"SUMMARY|CONVERSATION|CHAT|QUERY|QUESTION|ANSWER|PROMPT|INFO|NAME|USER|KEY|ZUGANGSDATEN|DATEN|"
            r"PASSWORT|NUTZER)\b)")
_FILL_IN = "replace fill substitute append insert encode ersetze füge trage"
_FILL_IN_RE = alt(r"fill\s+in", *_FILL_IN.split())

_PHISH_OWNER = (r"(?:your|their|his|her|the\W+(?:customer|caller|buyer|user)'?s?|(?:customer|caller|"
                r"buyer|user)'s)")
_PHISH_SECRET_W = ("card credit cvv cvc cvv2 security pin password passcode otp one time tan verification "
                   "iban bank login")
_PHISH_SECRET = (r"(?:(?:credit\W+|debit\W+|bank\W+)?card(?:\W+(?:number|details|pin|code))?|cvv2?|cvc|"
                 r"security\W+code|pin(?:\W+(?:code|number))?|password|passcode|one\W?time\W+(?:code|password)|"
                 r"otp|tan|verification\W+code|login\W+(?:details|code)|iban|bank\W+details)")
_NEGATION_WORDS = re.compile(r"\b(?:not|never|no|nobody|none|nie|nicht|niemals|niemand\w*|kein\w*)\b|n't\b")


def _asked_for(v: Views, m: re.Match[str]) -> bool:
    """No negation in the sentence up to the match's end ("we will never ask you to read out
    your PIN", "sagen Sie niemandem Ihre PIN")."""
    begin = max(0, m.start() - 120)
    stops = [e.end() for e in re.finditer(r"[.!?;]\s", v.flat[begin:m.start()])]
    return _NEGATION_WORDS.search(v.flat, begin + (stops[-1] if stops else 0), m.end()) is None


EXFILTRATION = [
    *(flat(rf"\b(?P<verb>{_X_STRONG}|{_X_WEAK})\b{words_between(5)}(?P<obj>{obj})\b",
            _X_STRONG_W + " " + _X_WEAK_W, *words, check=requested) for obj, words in _X_MODEL.items()),
    flat(rf"\b(?P<verb>{_X_STRONG})\b{words_between(5)}(?P<obj>(?:your\W+)?(?:\w+\W+){{0,2}}?{_X_SECRET})\b",
          _X_STRONG_W, _X_SECRET_W, check=_exfil_strong),
    flat(rf"\b(?P<verb>{_X_WEAK})\b{words_between(5)}(?P<obj>{_X_SECRET})\b",
          _X_WEAK_W, _X_SECRET_W, check=_exfil_weak),
    flat(rf"\b(?P<verb>(?P<strong>{_X_DE_STRONG})|{alt(*_X_DE_WEAK_W.split())})\b(?!\W+(?:sie|uns)\b)"
          rf"(?:\W+\w+){{0,8}}?\W+(?P<obj>{_X_DE_SECRET})\b",
          _X_DE_STRONG_W + " " + _X_DE_WEAK_W, contains=(_X_DE_SECRET_STEMS,), check=_exfil_de),
    # Putting the conversation or the user's data into a link or an image URL.
    flat(r"\b(?:summari[sz]e|encode|put|append|insert|embed)\b[^.!?]{0,80}?\b(?:conversation|"
          r"chat|context|prompt|user's\W+\w+|answer|question)\b[^.!?]{0,60}?\b(?:link|url|image|https?://)",
          "summarise summarize encode put append insert embed",
          "conversation chat context prompt user's answer question", "link url image http https"),
    Rule("lines", re.compile(rf"!?\[[^\]\n]{{0,200}}\]\(\s*<?(?i:https?://)[^)\s]{{0,2000}}{_X_QUERY}|"
                             rf"(?i:<img\b[^>]{{0,500}}\bsrc\s*=\s*[\"']?https?://)[^\"'\s>]{{0,2000}}{_X_QUERY}"),
         contains=(("](", "<img"), ("?",)), contains_in="low_lines"),
    Rule("lines", re.compile(r"!?\[[^\]\n]{0,200}\]\(\s*<?https?://[^)\s]{0,2000}[?&][\w.-]+=[^)\s]{0,2000}\)"
                             rf"(?=[^\n]{{0,200}}\b{_FILL_IN_RE}\b)|"
                             rf"\b{_FILL_IN_RE}\b[^\n]{{0,120}}!\[[^\]\n]{{0,200}}"
                             r"\]\(\s*<?https?://[^)\s]{0,2000}[?&][\w.-]+=", re.I),
         gate(_FILL_IN), (("](",), ("?", "&")), "low_lines"),
    # Asking the reader to say their card number, PIN or password out loud (to a caller, an
    # agent, "to confirm"): no business asks that in a help text or a system's answer.
    flat(rf"\b(?:read\W+(?:out|back|aloud)|tell\W+(?:us|me|the\W+\w+|our\W+\w+)|give\W+(?:us|me)|spell\W+out|"
          rf"recite|say|dictate|confirm\W+by\W+(?:reading|giving|telling|saying))\b{words_between(3)}"
          rf"{_PHISH_OWNER}\W+(?:\w+\W+)?{_PHISH_SECRET}\b",
          "read tell give spell recite say dictate confirm", _PHISH_SECRET_W, check=_asked_for),
    flat(r"\b(?:lies|lesen\W+sie|nenne|nennen\W+sie|sag|sage|sagen\W+sie|gib|geben\W+sie|buchstabiere|"
          r"diktiere|diktieren\W+sie|bestätige|bestätigen\W+sie)\b(?:\W+\w+){0,4}?\W+"
          r"(?:deine|ihre|seine|die|ihrer|seiner)\W+(?:\w+\W+)?(?:kartennummer|kreditkartennummer|pin|"
          r"geheimzahl|passwort|kennwort|sicherheitscode|prüfnummer|tan|cvv|cvc)\b",
          "lies lesen nenne nennen sag sage sagen gib geben buchstabiere diktiere diktieren bestätige "
          "bestätigen", "kartennummer kreditkartennummer pin geheimzahl passwort kennwort sicherheitscode "
          "prüfnummer tan cvv cvc", check=_asked_for),
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
                              "\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_INVISIBLE_RUN = re.compile(
    "[A-Za-z][\u200c\u200d][A-Za-z]|[\u00ad\u034f\u200b-\u200f\u2060-\u2064\ufeff\ufe00-\ufe0f]{2,}")


def _invisible(v: Views, m: re.Match[str]) -> bool:
    raw = v.raw
    return not raw.isascii() and (_INVISIBLE_ALONE.search(raw) is not None
                                  or "\ufeff" in raw[1:]  # a byte-order mark anywhere but first
                                  or _INVISIBLE_RUN.search(raw) is not None)


_HIDING_STYLE = (r"(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*(?:0*\.?0+|[01](?:\.\d+)?"
                 r"(?:px|pt))\b|opacity\s*:\s*0*\.?0+\b|(?<![-\w])color\s*:\s*(?:#fff(?:fff)?\b|white\b|"
                 r"rgba?\(\s*255\s*,\s*255\s*,\s*255)|(?:left|text-indent|top)\s*:\s*-\d{3,}|"
                 r"(?:height|width)\s*:\s*0\b|clip\s*:)")
_CONTAINERS = re.compile(
    r"<!--(?P<c1>.*?)(?:-->|$)|"
    rf"<(?P<t2>\w+)\b[^>]{{0,500}}\bstyle\s*=\s*[\"'][^\"']{{0,500}}{_HIDING_STYLE}[^>]{{0,500}}>(?P<c2>.{{0,400}}?)(?:</(?P=t2)>|$)|"
    r"<(?P<t3>\w+)\b[^>]{0,500}\s(?:hidden|aria-hidden\s*=\s*[\"']?true)\b[^>]{0,500}>(?P<c3>.{0,400}?)(?:</(?P=t3)>|$)|"
    r"<font\b[^>]{0,500}\bcolor\s*=\s*[\"']?(?:white|#fff(?:fff)?)\b[^>]{0,500}>(?P<c4>.{0,400}?)(?:</font>|$)|"
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
_TOOL_WORD = alt("tool", "function", "plugin", "action", "command", "skill")
_CALL_W = "call invoke execute trigger run use"
_TOOL_DE = alt(r"tools?", "werkzeug", "funktion", "befehl", "skript", "plugin", "aktion")
_TOOL_CUE = re.compile(r"\b(?:this\W+conversation|the\W+conversation|chat\W+history|your\W+context|"
                       r"every\W+time\W+you\W+(?:answer|respond|reply)|before\W+(?:you\W+)?(?:answer|"
                       r"respond|reply)(?:ing)?|after\W+(?:each|every)\W+answer|the\W+user's|user\W+data|"
                       r"silently|without\W+telling)\b")

TOOL_CALL = [
    flat(rf"\b(?:call|invoke|execute|trigger|run|use)\W+(?:the\W+|this\W+|your\W+|a\W+|an\W+)?"
          rf"(?:\w+\W+)?{_TOOL_WORD}s?\W+{_IDENT}", _CALL_W, _TOOL_WORD_W, contains=(_IDENT_HINT,)),
    flat(rf"\b(?:call|invoke|execute|trigger|run|use)\W+(?:the\W+|this\W+|your\W+|a\W+)?{_IDENT}"
          rf"[\w.]*[`'\"]?\W+{_TOOL_WORD}\b", _CALL_W, _TOOL_WORD_W, contains=(_IDENT_HINT,)),
    # Calling a function by name: only names that delete, grant, move or send something.
    flat(r"\b(?:invoke|execute|trigger|call|run)\W+[`'\"]?[a-z]*(?:delete|drop|wipe|remove|purge|reset|grant|"
          r"transfer|export|send|upload|exec|shell|eval|sudo|admin|refund|disable)\w*\(",
          "invoke execute trigger call run", contains=(("(",),)),
    flat(r"\b(?:using|with|via|through|use)\W+(?:your|the\W+model's)\W+(?:shell|terminal|bash|code|python|"
          r"browser|browsing|web|search|email|e-mail|http|file|api|retrieval|fetch)\W+(?:tool|plugin|function|"
          r"access|capabilit(?:y|ies))\b", "using with via through use", "your",
          "tool plugin function access capability capabilities"),
    flat(r"\b(?:functions?|tools?)\.[a-z_]\w*\s*\(", "functions function tools tool",
          contains=(("functions.", "function.", "tools.", "tool."),)),
    flat(r"\buse\W+(?:the|your)\W+(?:\w+\W+)?(?:tool|plugin|function|browser)s?\W+to\W+(?:send|email|"
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
    flat(rf"\b(?:führe|rufe|starte|verwende|benutze|nutze)\b(?!\W+sie\b)(?:\W+\w+){{0,3}}?\W+"
          rf"{_TOOL_DE}\W+{_IDENT}", "führe rufe starte verwende benutze nutze",
          "tool tools werkzeug funktion befehl skript plugin aktion", contains=(_IDENT_HINT,)),
    # Fetching a URL on the model's behalf, or requests whose purpose is the model's data.
    flat(r"(?<!git )\b(?:fetch|retrieve|browse\W+to|navigate\W+to)(?!\s*\()\W+(?:the\W+)?(?:\w+\W+)?"
          r"(?:at\W+|from\W+)?<?https?://", "fetch retrieve browse navigate", contains=(("http",),)),
    flat(r"\b(?:visit|open|load|read|access|rufe|öffne|lade|besuche)\b[^.!?]{0,40}?https?://\S{1,2000}"
          r"[^.!?]{0,30}\b(?:and|then|und|dann)\W+(?:obey|do\W+what|execute|carry\W+out|folge|befolge|"
          r"gehorche|führe\W+(?:\w+\W+)?aus|mach\W+was)\b",
          "visit open load read access rufe öffne lade besuche",
          "obey do execute carry folge befolge gehorche führe mach", contains=(("http",),)),
    flat(r"\b(?:nutze|benutze|verwende)\W+(?:dein|deine[nms]?)\W+(?:\w+\W+)?(?:tool|werkzeug|plugin|"
          r"funktion)s?\b", "nutze benutze verwende", "dein deine deinen deinem deines",
          "tool tools werkzeug plugin funktion"),
    flat(r"\b(?:make|send|issue|perform|do)\W+an?\W+(?:https?\W+|get\W+|post\W+|put\W+|delete\W+|web\W+|"
          r"api\W+)*(?:request|call|webhook)\W+to\W+<?https?://", "request call webhook",
          contains=(("http",),), check=lambda v, m: _TOOL_CUE.search(sentence(v, m, 200)) is not None),
    # Moving data to a URL ("post the salary bands to https://..."); the reader's own files,
    # "upload your receipts to https://...", and formal German requests are not flagged.
    flat(r"\b(?:send|post|upload|transmit|forward|exfiltrate|push|sende|schicke?|lade|übermittle|leite|"
          r"poste)\b(?!\W+(?:sie|your|yours|deine?[nmrs]?|ihre?[nmrs]?)\b)[^.!?]{0,60}?\b"
          r"(?:to|into|an|nach)\W+<?https?://",
          "send post upload transmit forward exfiltrate push sende schicke schick lade übermittle leite "
          "poste", contains=(("http",),)),
    # Shell transfers that read local secrets or run a command inside the request.
    flat(r"\b(?:curl|wget|invoke-webrequest|iwr)\b[^\n]{0,200}?(?:\$\(|(?:-d|--data[\w-]*|-f|--form|-t|"
          r"--upload-file|--post-file|--post-data|--body-file)[\s=]*['\"]?@?\s*(?:~|/etc/|\$home|"
          r"\S*\.ssh|\S*\.aws|\S*\.env\b|\S*id_rsa|\S*passwd|\S*shadow))", "curl wget invoke iwr"),
]
