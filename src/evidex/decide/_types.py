"""What a question asks for, and what a sentence states: answer types in English and German.

Classic question answering checks that the sentence it quotes holds something of the kind the
question asks for (Li & Roth's question classes): "how long" wants a duration, "what does it
cost" an amount of money, "what is your phone number" a phone number. A sentence on the right
topic that states no such thing does not answer ("How long does the battery take to charge?"
against a page that never says): that is what declines most on-topic near misses without a
similarity bar.

* ``asked(question)``: the kind of answer wanted (``Asked.kind``), whether a sentence lacking it
  cannot answer (``Asked.strict``: values such as durations, prices, counts, phone numbers), and
  for measured quantities the dimension. Kinds whose mentions cannot be read reliably from text
  (a place, a person, a reason, a procedure, yes/no) are never strict: they only prefer.
* ``stated(sentence)``: the typed mentions a sentence holds (``Mention``: kind, span). Durations,
  periods, times, dates, prices, percentages and measured quantities come from the value scanner
  of conflict detection (``values``), so both read values one way.
* ``matches(asked, mentions)``: the mentions of the asked kind; ``stated_as(asked, sentence)``
  both at once.

Patterns are deliberately small and readable; the unit and property tests pin their behaviour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..conflicts import values

__all__ = ["STRICT", "Asked", "Mention", "asked", "matches", "stated", "stated_as"]

#: Kinds a sentence must state to answer (when the question asks for them).
STRICT = frozenset({"duration", "date", "time", "year", "price", "percent", "quantity", "count",
                    "phone", "email", "url", "code", "contact"})


@dataclass(frozen=True, slots=True)
class Asked:
    """What a question asks for. ``kind`` is one of: duration, date (a point in time: date,
    year, time of day or an event it is tied to), time (a time of day), year, price, percent,
    quantity (``dimension``: mass, length, volume, people), count, phone, email, url, code,
    contact (e-mail, phone or a web page), place, person, reason, procedure, yesno, other."""

    kind: str
    dimension: str | None = None

    @property
    def strict(self) -> bool:
        return self.kind in STRICT


@dataclass(frozen=True, slots=True)
class Mention:
    """A typed mention in a sentence: its kind (as in ``Asked.kind``, plus "number",
    "temporal", "steps") and span."""

    kind: str
    start: int
    end: int


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.VERBOSE)


# ---- questions --------------------------------------------------------------------------------
# A question is typed by the phrase that opens its asking clause ("how long", "was kostet",
# "what is your phone number"), tried in this order; a clause opened by nothing known is "other".
_MONEY = (r"cost|costs|charge|charged|charges|fee|fees|price|prices|postage|deposit|surcharge|"
          r"rent|rental|shipping\s+costs?|delivery\s+costs?|revenue|turnover|profit|salary|income|wage")
_GELD = (r"kostet|kosten|gebühr|gebühren|preis|preise|porto|versandkosten|miete|pfand|aufpreis|umsatz|"
         r"gewinn|gehalt|lohn")
_TIME_UNITS = (r"seconds|minutes|hours|days|weeks|months|years|business\s+days|working\s+days|nights|"
               r"sekunden|minuten|stunden|tage|wochen|monate|jahre|werktage|nächte")
_ID_NOUNS = (r"sku|iban|bic|article\s+number|product\s+number|item\s+number|order\s+number|"
             r"customer\s+number|vat\s+(?:id|identification\s+number|number)|registration\s+number|"
             r"tracking\s+number|error\s+code|zip\s+code|post\s*code|postal\s+code|"
             r"artikelnummer|bestellnummer|kundennummer|ust-?id(?:-?nr\.?|-?nummer)?|"
             r"umsatzsteuer-?identifikationsnummer|handelsregisternummer|registernummer|"
             r"sendungsnummer|fehlercode|postleitzahl")
#: (kind, dimension, pattern) for the opening of the asking clause.
_OPENINGS: tuple[tuple[str, str | None, str], ...] = (
    ("percent", None, r"(?:what|which)\s+(?:percentage|percent|share|proportion)\b|how\s+many\s+percent\b|"
                      r"wie\s+viele?\s+prozent\b|welche[rn]?\s+anteil\b"),
    ("price", None, rf"how\s+much\b(?=[^?]*\b(?:{_MONEY}|pay|paid)\b)|how\s+expensive\b|"
                    rf"what\s+(?:does|do|did|will|would)\b[^?]*\bcost\b|"
                    rf"(?:what|how\s+much)(?:'s|\s+is|\s+are|\s+was)\s+(?:the\s+|a\s+|your\s+|"
                    rf"my\s+)?(?:[\w'’-]+\s+){{0,3}}(?:{_MONEY})\b|"
                    rf"was\s+(?:kostet|kosten|zahle|zahlt|bezahle)\b|wie\s+teuer\b|"
                    rf"wie\s+viel\b(?=[^?]*\b(?:{_GELD}|zahle|zahlt|bezahlen|bezahle)\b)|"
                    rf"wie\s+hoch\s+(?:ist|sind)\s+(?:die|der|das)\s+[\wäöüß-]*(?:{_GELD})\b"),
    ("quantity", "mass", r"how\s+heavy\b|how\s+much\s+(?:does|do|did|will|would)\b[^?]*\bweigh\b|"
                         r"what\s+(?:does|do)\b[^?]*\bweigh\b|"
                         r"(?:what|how\s+much)(?:'s|\s+is)\s+(?:the\s+|its\s+)?(?:[\w-]+\s+){0,3}(?:weight|"
                         r"fill)\b|"
                         r"wie\s+schwer\b|wie\s+viel\s+wieg|was\s+wiegt\b|"
                         r"wie\s+hoch\s+ist\s+das\s+\w*gewicht\b"),
    ("quantity", "people", r"how\s+many\s+(?:people|persons|adults|guests)\b|"
                           r"(?:für\s+)?wie\s+viele\s+personen\b"),
    ("quantity", "volume", r"how\s+many\s+(?:litres|liters|millilitres|milliliters)\b|wie\s+viele?\s+liter\b|"
                           r"(?:what|how\s+much)(?:'s|\s+is)\s+(?:the\s+|"
                           r"its\s+)?(?:[\w-]+\s+){0,3}(?:volume|capacity)\b"),
    ("duration", None, rf"how\s+long\b|for\s+how\s+long\b|how\s+soon\b|how\s+quickly\b|how\s+fast\b|"
                       rf"how\s+many\s+(?:{_TIME_UNITS})\b|how\s+much\s+time\b|within\s+what\s+time\b|"
                       rf"wie\s+lange?\b|wie\s+schnell\b|wie\s+bald\b|wie\s+viele\s+(?:{_TIME_UNITS})\b|"
                       rf"wie\s+viel\s+zeit\b|innerhalb\s+welcher\s+frist\b"),
    ("quantity", "length", r"how\s+(?:tall|high|wide|deep|far|big|large)\b|"
                           r"(?:what|how\s+much)(?:'s|\s+is)\s+(?:the\s+|"
                           r"its\s+)?(?:[\w-]+\s+){0,3}(?:length|height|width|depth|size|distance)\b|"
                           r"wie\s+(?:hoch|breit|tief|weit|groß|gross)\b"),
    ("year", None, r"(?:in\s+)?(?:what|which)\s+year\b|in\s+welchem\s+jahr\b|welches\s+jahr\b"),
    ("time", None, r"what\s+time\b|at\s+what\s+time\b|how\s+(?:late|early)\b|"
                   r"(?:what|when)\s+(?:are|is)\s+(?:the\s+|your\s+)?(?:[\w-]+\s+){0,3}(?:opening|"
                   r"business)\s+(?:hours|times)\b|"
                   r"when\s+(?:do|does|is|are)\s+(?:you|the\s+[\w-]+(?:\s+[\w-]+)?|your\s+[\w-]+)\s+(?:open|"
                   r"close|closed)\b|"
                   r"um\s+wie\s+viel\s+uhr\b|wie\s+spät\b|wann\s+(?:öffnet|schließt|öffnen|schließen|hat|"
                   r"haben)\b[^?]*\b(?:geöffnet|offen|auf|zu)?"),
    ("date", None, r"when\b|what\s+(?:date|day)\b|which\s+(?:date|day)\b|(?:until|since|by|from)\s+when\b|"
                   r"wann\b|an\s+welchem\s+(?:tag|datum)\b|(?:seit|bis|ab)\s+wann\b"),
    ("phone", None, r"(?:what|which)(?:'s|\s+is)?\s+(?:the\s+|your\s+|my\s+)?(?:[\w-]+\s+){0,3}(?:(?:phone|"
                    r"telephone|fax)\s+number|hotline)\b|"
                    r"(?:what|which)\s+number\s+(?:do|should|can|could)\s+(?:i|we)\s+call\b|"
                    r"wie\s+lautet\s+(?:die|eure|ihre|deren)\s+\w*(?:telefon|rufnummer|hotline)\w*|"
                    r"welche\s+\w*(?:telefonnummer|rufnummer)\b|unter\s+welcher\s+(?:nummer|telefonnummer|"
                    r"rufnummer)\b"),
    ("email", None, r"(?:what|which)(?:'s|\s+is)?\s+(?:the\s+|your\s+|"
                    r"my\s+)?(?:[\w-]+\s+){0,3}e-?mail(?:\s+address)?\b|"
                    r"(?:to\s+)?which\s+(?:e-?mail\s+)?address\b|wie\s+lautet\s+(?:die|eure|ihre|"
                    r"deren)\s+\w*e-?mail\w*|"
                    r"an\s+welche\s+(?:e-?mail-?)?adresse\b|welche\s+e-?mail\w*"),
    ("url", None, r"(?:what|which)(?:'s|\s+is)?\s+(?:the\s+|your\s+)?(?:[\w-]+\s+){0,3}(?:website|"
                  r"web\s*site|web\s+address|url|link|web\s*page)\b|"
                  r"(?:on|at)\s+which\s+(?:website|page|address)\b|welche\s+(?:webseite|internetseite|"
                  r"internetadresse|url)\b|"
                  r"wie\s+lautet\s+(?:die|eure|ihre)\s+(?:webseite|internetadresse|url)\b"),
    ("code", None, rf"(?:what|which)(?:'s|\s+is|\s+are)?\s+(?:the\s+|your\s+|my\s+|its\s+|"
                   rf"their\s+)?(?:[\w-]+\s+){{0,3}}(?:{_ID_NOUNS})\b|"
                   rf"what\s+does\s+(?:an?\s+|the\s+|my\s+|your\s+)?(?:[\w-]+\s+){{0,2}}(?:number|code|"
                   rf"id)\s+look\s+like\b|"
                   rf"wie\s+(?:lautet|sieht)\s+(?:die|der|das|eure|ihre|"
                   rf"meine)\s+(?:[\w-]+\s+){{0,2}}(?:{_ID_NOUNS}|nummer|kennung)\b|"
                   rf"welche\s+(?:{_ID_NOUNS})\b"),
    ("contact", None, r"who\s+(?:do|should|can|could|would|must)\s+(?:i|we)\s+(?:contact|talk\s+to|"
                      r"speak\s+to|write\s+to|"
                      r"ask|reach|call|email|e-mail)\b|how\s+(?:do|can|could)\s+(?:i|we)\s+(?:contact|reach|"
                      r"get\s+in\s+touch)\b|"
                      r"an\s+wen\s+(?:kann|muss|soll|wende|können|müssen)\b|wie\s+(?:erreiche|"
                      r"kontaktiere)\s+ich\b"),
    ("count", None, r"how\s+(?:many|often|old)\b|how\s+much\b|(?:what\s+is\s+)?the\s+number\s+of\b|"
                    r"wie\s+viele?\b|"
                    r"wie\s+oft\b|wie\s+alt\b|(?:die\s+)?anzahl\b|(?:at\s+|from\s+)?(?:what|which)\s+age\b|"
                    r"(?:ab\s+)?welchem\s+alter\b"),
    ("procedure", None, r"how\s+(?:do|can|should|would|could|must|may)\s+(?:i|we|you|one)\b|how\s+to\b|"
                        r"what\s+(?:should|do|must|can|could)\s+(?:i|we)\s+do\b|what\s+(?:are|"
                        r"is)\s+the\s+steps?\b|"
                        r"what\s+do\s+i\s+need\s+to\s+do\b|"
                        r"wie\s+(?:kann|muss|soll|mache|gehe|bekomme|finde|ändere|lösche|melde|"
                        r"beantrage)\s+(?:ich|man|wir)\b|"
                        r"was\s+(?:muss|soll|kann)\s+(?:ich|man|wir)\s+tun\b|was\s+tun\b"),
    ("reason", None, r"why\b|how\s+come\b|what\s+is\s+the\s+reason\b|warum\b|wieso\b|weshalb\b|weswegen\b|"
                     r"aus\s+welchem\s+grund\b"),
    ("place", None, r"where\b|wo(?:hin|her)?\b|in\s+which\s+(?:city|country|town|store|shop|place|street|"
                    r"part)\b|"
                    r"which\s+(?:city|country|town|station|stop|street|address|airport|port|region)\b|"
                    r"in\s+welche[rm]?\s+(?:stadt|land|filiale|ort)\b|welche\s+(?:stadt|haltestelle|"
                    r"adresse)\b"),
    ("person", None, r"who\b|whom\b|whose\b|wer\b|wem\b|wen\b|wessen\b|"
                     r"which\s+(?:company|person|team|department|carrier|bank|firm|brand|court|authority)\b|"
                     r"welche[rs]?\s+(?:firma|person|bank|gericht|behörde)\b"),
    ("yesno", None, r"(?:do|does|did|can|could|is|are|was|were|will|would|should|shall|may|might|must|have|"
                    r"has|had|am|"
                    r"isn't|aren't|don't|doesn't|can't|won't|"
                    r"kann|können|könnt|ist|sind|gibt|gilt|gelten|muss|müssen|darf|dürfen|habe|hat|haben|"
                    r"wird|"
                    r"werden|war|waren|soll|sollte|bekomme|bekommt|bekommen|nehmt|nimmt|bietet|bietest|"
                    r"liefert|"
                    r"liefern|akzeptiert|akzeptieren|verkauft|verkaufen|versendet|versenden|brauche|"
                    r"braucht)\b"),
)
_OPENING = [(k, d, re.compile(p, re.IGNORECASE)) for k, d, p in _OPENINGS]
#: Where an asking clause may open: the sentence start, after a comma, colon, semicolon or
#: dash, or after a leading conjunction ("and how much ...", "so when ...").
_CLAUSE = re.compile(r"(?:^|[,;:–—(]\s*|\s-\s)(?:(?:and|but|so|then|und|aber|also|oder)\s+)?"
                     r"(?:(?:within|for|in|at|by|from|to|on|after|until|innerhalb|an|um|bis|seit|ab|für|zu|"
                     r"nach)\s+(?=(?:how|what|which|when|wie|welche\w*|wann|was)\b))?(?=\w)",
                     re.IGNORECASE)
#: A sentence starts only after a mark (the lookbehinds): one scan of each, not one per letter.
_ASKING = re.compile(r"(?<![^.!?])[^.!?]*\?|(?<![^.!?])[^.!?]+$")


def _asking_sentence(question: str) -> str:
    """The sentence of ``question`` that asks (the last one ending in "?", else the last)."""
    parts = [p.strip() for p in _ASKING.findall(question) if p.strip()]
    asking = [p for p in parts if p.endswith("?")]
    return (asking or parts or [question])[-1]


def asked(question: str) -> Asked:
    """What ``question`` (English or German) asks for: the kind named by the phrase that opens
    its asking clause (the first clause of its asking sentence that any opening matches)."""
    text = _asking_sentence(question)
    for c in _CLAUSE.finditer(text):
        for kind, dimension, rx in _OPENING:
            if rx.match(text, c.end()):
                return Asked(kind, dimension)
    # A keyword query or a request ("opening hours Leipzig", "Versandkosten Österreich"):
    # typed by the value nouns it names.
    for kind, dimension, rx in _NOUNS:
        if rx.search(text):
            return Asked(kind, dimension)
    return Asked("other")


_NOUNS: tuple[tuple[str, str | None, re.Pattern[str]], ...] = tuple(
    (k, d, re.compile(p, re.IGNORECASE)) for k, d, p in (
        ("time", None, r"\b(?:opening\s+(?:hours|times)|öffnungszeiten)\b"),
        ("phone", None, r"\b(?:phone\s+number|telephone\s+number|hotline|telefonnummer|rufnummer)\b"),
        ("email", None, r"\b(?:e-?mail\s+address|e-?mail-adresse)\b"),
        ("price", None, rf"\b(?:price|prices|cost|costs|fee|fees|postage|shipping\s+costs?|{_GELD})\b"),
        ("quantity", "mass", r"\b(?:weight|gewicht|füllgewicht|fill\s+weight)\b"),
        ("code", None, rf"\b(?:{_ID_NOUNS})\b"),
    ))


# ---- sentences --------------------------------------------------------------------------------
_NUMBER_WORD = (r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
                r"eighty|ninety|hundred|thousand|million|billion|dozen|half|a|an|"
                r"ein|eine|einen|einem|einer|eines|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|"
                r"zwölf|fünfzehn|zwanzig|dreißig|vierzig|fünfzig|hundert|tausend|halbe?n?")
_NUM = rf"(?:\d+(?:[.,]\d+)?|{_NUMBER_WORD})"
_SENTENCE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("duration", re.compile(
        rf"\b{_NUM}(?:\s*[-–]\s*{_NUM})?\s+(?:(?:full|whole|calendar|business|working|clear|more|further|"
        rf"extra|additional|weitere[n]?|volle[n]?)\s+)?(?:seconds?|minutes?|mins?|hours?|hrs?|days?|nights?|"
        rf"weeks?|months?|years?|sekunden?|minuten?|stunden?|tagen?|tage|nächte[n]?|wochen?|monate[n]?|"
        rf"monats|"
        rf"jahre[n]?|jahres|werktage[n]?|werktag)\b", re.IGNORECASE)),
    ("price", re.compile(
        r"(?<![\w.,])\d+(?:[.,]\d+)*\s*(?:million\s+|billion\s+|thousand\s+)?(?:[A-Z][a-z]+\s+)?"
        r"(?:francs?|dollars?|cents?|pounds?|euros?|guilders?|gulden|mark|reichsmark|yen|kronor|kroner|"
        r"crowns?)\b",
        re.IGNORECASE)),
    ("quantity:length", re.compile(
        r"(?<![\w.,])\d+(?:[.,]\d+)*\s*(?:kilometres?|kilometers?|kilometern|metres?|meters?|metern|"
        r"centimetres?|centimeters?|zentimetern?|millimetres?|millimeters?|millimetern?|miles?|meilen|feet|"
        r"foot|ft|"
        r"inch(?:es)?|yards?)\b", re.IGNORECASE)),
    ("quantity:mass", re.compile(
        r"(?<![\w.,])\d+(?:[.,]\d+)*\s*(?:tonnes?|tons?|tonnen|pounds|lbs?|ounces?|oz|kilos?)\b",
        re.IGNORECASE)),
    ("number", re.compile(r"\b(?:halves|thirds?|quarters?|drittel|viertel|hälfte)\b", re.IGNORECASE)),
    # Runs of letters, dashes and dots are bounded (a local part holds at most 64 characters, a
    # domain label 63, a street name 60): a pattern tried at each character of a long run scans
    # a bounded stretch from there, not the rest of the run, so the work grows linearly.
    ("email", re.compile(r"[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+")),
    ("url", re.compile(r"https?://\S+|www\.\S+|"
                       r"\b[\w-]{1,63}(?:\.[\w-]{1,63}){0,9}\.(?:com|de|at|ch|org|net|eu|io|example)"
                       r"(?:/[\w./%-]*)?\b", re.IGNORECASE)),
    ("phone", re.compile(r"(?<![\w.,])(?:\+|00)\d{1,3}[\s/.-]?(?:\(0\))?(?:\d[\s/.-]?){6,14}\d(?![\w.,]\d)|"
                         r"(?<![\w.,])0\d{2,5}[\s/-]\d(?:[\s/-]?\d){4,10}(?![\w.,]\d)")),
    ("code", re.compile(r"\b[A-Z]{1,6}[-‐]?\d{2,}+[A-Z0-9-]*\b|\b[A-Z]{2}\d{6,}+\b|\bHRB\s?\d+\b")),
    ("year", re.compile(r"(?<![\d.,])(?:1[0-9]{3}|20[0-9]{2})(?![\d.,]\d)")),
    ("number", re.compile(
        r"(?<![\w])\d+(?:[.,]\d+)?\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
        r"thirteen|fourteen|fifteen|twenty|thirty|forty|fifty|sixty|hundred|thousand|million|billion|dozen|"
        r"once|twice|single|unlimited|ein|eine|einen|einem|einer|zwei|drei|vier|fünf|sechs|sieben|acht|neun|"
        r"zehn|elf|"
        r"zwölf|zwanzig|dreißig|hundert|tausend|millionen?|milliarden?|einmal|zweimal|unbegrenzt)\b",
        re.IGNORECASE)),
    ("free", re.compile(r"\b(?:free(?:\s+of\s+charge)?|no\s+charge|at\s+no\s+(?:extra\s+)?cost|"
                        r"costs?\s+nothing|"
                        r"kostenlos|kostenfrei|gratis|umsonst|gebührenfrei)\b", re.IGNORECASE)),
    ("temporal", re.compile(
        r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?|today|tomorrow|"
        r"yesterday|midnight|noon|morning|evening|night|spring|summer|autumn|winter|christmas|easter|"
        r"business\s+days?|working\s+days?|after|before|until|till|once|as\s+soon\s+as|immediately|"
        r"montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|werktags?|heute|morgen|gestern|"
        r"mitternacht|mittag|frühling|sommer|herbst|winter|weihnachten|ostern|werktage?n?|nach|vor|bis|"
        r"sobald|sofort|spätestens|frühestens)\b", re.IGNORECASE)),
    ("reason", re.compile(r"\b(?:because|since|due\s+to|as\s+a\s+result|so\s+that|in\s+order\s+to|therefore|"
                          r"which\s+is\s+why|weil|denn|wegen|damit|deshalb|daher|aufgrund|darum)\b",
                          re.IGNORECASE)),
    ("place", re.compile(r"\b[\wäöüß-]{1,60}"
                         r"(?:straße|strasse|str\.|weg|platz|allee|gasse|ring|damm|ufer)"
                         r"\s*\d+|"
                         r"\b\d{4,5}\s+[A-ZÄÖÜ][a-zäöüß]+|\b\d+\s+[A-Z][a-z]+\s+(?:Street|St\.|Road|Avenue|"
                         r"Lane)\b|"
                         r"\b(?:in|at|near|from|to|im|in\s+der|am|bei|nach)\s+(?:the\s+)?[A-ZÄÖÜ][\wäöüß-]+")),
    ("person", re.compile(r"(?<![.!?]\s)(?<!^)\b[A-ZÄÖÜ][a-zäöüß]+(?:\s+(?:von|van|de|der|du|"
                          r"la)\s+)?\s+[A-ZÄÖÜ][a-zäöüß]+\b")),
    ("steps", re.compile(
        r"^(?:\d+[.)]\s|[-*•]\s|(?:first|then|next|finally|zuerst|dann|danach|anschließend|abschließend)\b|"
        r"(?:open|click|choose|select|sign\s+in|log\s+in|go\s+to|enter|send|bring|call|contact|register|"
        r"fill\s+in|"
        r"print|pack|attach|drop|tap|use|write|ask|take|put|visit|add|remove|follow|check|wash|dry|"
        r"öffnen\s+sie|klicken\s+sie|wählen\s+sie|geben\s+sie|melden\s+sie|senden\s+sie|schicken\s+sie|"
        r"bringen\s+sie|rufen\s+sie|füllen\s+sie|gehen\s+sie|nutzen\s+sie|tippen\s+sie)\b)", re.IGNORECASE)),
)


def stated(sentence: str, kinds: frozenset[str] | None = None) -> list[Mention]:
    """The typed mentions of ``sentence``, in order (overlaps allowed: "+49 30 1234" is a phone
    number and holds numbers); with ``kinds``, only mentions of those kinds (the patterns of
    other kinds are not run: most of the time is theirs)."""
    found = [Mention(_value_kind(v.kind), v.start, v.end) for v in values(sentence)]
    out = [m for m in found if kinds is None or m.kind in kinds]
    for kind, rx in _SENTENCE_PATTERNS:
        if kinds is None or kind in kinds:
            out.extend(Mention(kind, m.start(), m.end()) for m in rx.finditer(sentence))
    out.sort(key=lambda m: (m.start, m.end))
    return out


def _value_kind(kind: str) -> str:
    """A conflict value's kind as a mention kind ("quantity:mass" stays whole)."""
    return kind if kind.startswith("quantity") else kind.split(":")[0]


#: For each asked kind, the mention kinds that state it.
_STATES: dict[str, frozenset[str]] = {
    "duration": frozenset({"duration", "period", "time", "date", "year"}),
    "date": frozenset({"date", "year", "time", "duration", "period", "temporal"}),
    "time": frozenset({"time", "date", "temporal"}),
    "year": frozenset({"year", "date", "number"}),
    "price": frozenset({"price", "free", "percent"}),
    "percent": frozenset({"percent"}),
    "count": frozenset({"number", "duration", "period", "percent", "price", "free"}),
    "phone": frozenset({"phone"}),
    "email": frozenset({"email"}),
    "url": frozenset({"url"}),
    "code": frozenset({"code"}),
    "contact": frozenset({"email", "phone", "url"}),
    "place": frozenset({"place"}),
    "person": frozenset({"person"}),
    "reason": frozenset({"reason"}),
    "procedure": frozenset({"steps"}),
}


def stated_as(a: Asked, sentence: str) -> list[Mention]:
    """The mentions of ``sentence`` that state what ``a`` asks for: ``matches(a,
    stated(sentence))``, without scanning a sentence for a kind no mention can state (yes/no,
    other), which is most questions."""
    kinds = _wanted(a)
    return matches(a, stated(sentence, kinds)) if kinds else []


def _wanted(a: Asked) -> frozenset[str]:
    """The mention kinds that can state what ``a`` asks for (``matches`` keeps only these)."""
    if a.kind == "quantity":
        return frozenset({f"quantity:{a.dimension}", "number"})
    kinds = _STATES.get(a.kind, frozenset())
    return kinds | {"quantity:length"} if a.kind == "duration" else kinds


def matches(a: Asked, mentions: list[Mention]) -> list[Mention]:
    """The mentions that state what ``a`` asks for (a measured quantity of its dimension; for
    "how long", a length too)."""
    if a.kind == "quantity":
        want = {f"quantity:{a.dimension}"}
        if a.dimension == "people":
            want.add("number")
        return [m for m in mentions if m.kind in want]
    kinds = _STATES.get(a.kind)
    if kinds is None:
        return []
    found = [m for m in mentions if m.kind in kinds]
    if a.kind == "duration":
        found += [m for m in mentions if m.kind == "quantity:length"]
    return found
