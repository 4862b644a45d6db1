"""Text analysis for operation search: the same steps at index time and at query time.

    words("POST /v1/chat.postMessage")  -> ["post", "v1", "chat", "post", "message"]
    terms("Sending the messages")       -> ["send", "message"]       (stop words out, stemmed)

Splitting handles camelCase, snake_case, kebab-case, dotted and slashed paths, HTML tags and
markdown links. `stem` is step 1 of Porter's (1980) suffix stripper, written out here (no
dependency). The small hand-made tables below are the language knowledge, applied at query
time only, so the index holds what the documents say:

    EQUIVALENTS  words that mean the same in an API (repo/repository, react/reaction)
    SYNONYMS     verbs people use for related actions (send/post/deliver, delete/remove)
    ACTIONS      verbs grouped by the action they ask for (create, get, list, search, delete, update)
    IDIOMS       phrasal verbs and abbreviations ("set up" -> create, "PR" -> pull request)

What nouns and whole phrases mean is the semantic vectors' part (engine/catalog/embedding.py),
not a table's: the phrase-specific entries the lexical ranker once had are gone (issue 13).
"""
from __future__ import annotations

import re
from functools import lru_cache

# --- splitting -------------------------------------------------------------------------------

# Compiled on first use (re's own cache is per process): a one-shot search's phrase, lower case
# and without markup, needs only _WORD, and compiling the rest cost ~0.4 ms of its start.
_pattern = lru_cache(maxsize=None)(re.compile)

_HTML_TAG = r"<[^>]{0,200}>"
_MD_LINK = r"\[([^\]]{0,200})\]\([^)]{0,500}\)"
_URL = r"https?://\S+"
_ENTITY = r"&[a-z]{2,8};|&#\d{1,6};"
# where a word ends inside another: a space goes there. (Zero-width: the replacement is a plain
# space, which re substitutes in C, where a template like r"\1 \2" is expanded in Python per
# match; the same splits as those group patterns, checked on 200,000 random strings.)
_CAMEL_1 = r"(?<=[a-z0-9])(?=[A-Z])"             # fooBar -> foo Bar
_CAMEL_2 = r"(?<=[A-Z])(?=[A-Z][a-z])"           # HTMLParser -> HTML Parser
_DIGIT_WORD = r"(?<=\d)(?=[A-Z][a-z])"           # v2Users -> v2 Users
_WORD = r"[^\W_]+"


def clean(text: str) -> str:
    """Markup out: HTML tags, entities, URLs; a markdown link keeps its text. (Each pattern runs
    only on a text holding what it needs to match.)"""
    if "](" in text:
        text = _pattern(_MD_LINK).sub(r"\1", text)
    if "<" in text:
        text = _pattern(_HTML_TAG).sub(" ", text)
    if "&" in text:
        text = _pattern(_ENTITY).sub(" ", text)
    if "://" in text:
        text = _pattern(_URL).sub(" ", text)
    return text


def words(text: str) -> list[str]:
    """Lower-case words, split at case changes and at anything not a letter or digit."""
    if not text:
        return []
    if text.lower() != text:    # the case changes need an upper-case letter
        text = _pattern(_CAMEL_1).sub(" ", text)
        text = _pattern(_CAMEL_2).sub(" ", text)
        text = _pattern(_DIGIT_WORD).sub(" ", text)
    return [w.lower() for w in _pattern(_WORD).findall(text)]


STOP_WORDS = frozenset(["a", "an", "the", "to", "of", "for", "in", "on", "at", "by", "with", "from", "into", "onto", "about", "as", "is", "are", "be", "been", "being", "was", "were", "it", "its", "this", "that", "these", "those", "and", "or", "but", "if", "then", "than", "so", "such", "my", "me", "i", "we", "our", "us", "you", "your", "yours", "their", "them", "they", "he", "she", "his", "her", "him", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "done", "has", "have", "had", "having", "not", "no", "nor", "any", "each", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "there", "here", "via", "per", "also", "only", "just", "very", "more", "most", "some", "same", "other", "own", "up", "out", "over", "under", "again", "further", "once", "please", "want", "need", "like", "using", "use", "used", "one", "ones", "e", "g", "eg", "ie", "etc"])

# --- Porter stemmer --------------------------------------------------------------------------

_VOWELS = frozenset("aeiou")


def _is_consonant(w: str, i: int) -> bool:
    c = w[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _is_consonant(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]."""
    m, prev_vowel = 0, False
    for i in range(len(stem)):
        cons = _is_consonant(stem, i)
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _double_consonant(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _is_consonant(w, len(w) - 1)


def _cvc(w: str) -> bool:
    return (len(w) >= 3 and _is_consonant(w, len(w) - 3) and not _is_consonant(w, len(w) - 2)
            and _is_consonant(w, len(w) - 1) and w[-1] not in "wxy")


def _step1(w: str) -> str:
    # 1a
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # 1b
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w = w[: -len(suffix)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double_consonant(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _measure(w) == 1 and _cvc(w):
                    w += "e"
                break
    # 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    return w


@lru_cache(maxsize=50000)
def stem(w: str) -> str:
    """Step 1 of Porter's algorithm (plurals, -ed, -ing, -y); words of three letters or fewer
    and words with digits are left alone. Porter's later steps fold words an API keeps apart
    ("customer" and "custom", "organization" and "organ") and ranked no better on the labelled
    set; EQUIVALENTS pairs the verbs and nouns that matter instead ("react", "reaction")."""
    if len(w) <= 3 or not w.isalpha():
        return w
    return _step1(w)


def terms(text: str, *, keep_stop_words: bool = False) -> list[str]:
    """Stemmed index terms of a text, in order (duplicates kept)."""
    return [stem(w) for w in words(text) if (keep_stop_words or w not in STOP_WORDS) and len(w) > 1]


# --- synonyms and actions --------------------------------------------------------------------

# Words that mean the same thing in an API: abbreviations, spellings, and a verb with its noun
# (the light stemmer keeps "reaction" and "react" apart). Full credit at query time.
_EQUIVALENT_GROUPS = """
repository repo
document doc
react reaction
create creation
transcribe transcription
subscribe subscription
collaborate collaboration collaborator
moderate moderation
invite invitation
delete deletion
authenticate authentication authenticated
translate translation
complete completion
generate generation
notify notification
verify verification
configure configuration config
install installation
describe description
permit permission
upload uploaded
schedule scheduled
suppress suppression
archive archived
outbound outgoing
inbound incoming
""".strip().splitlines()

# Each line is one group of verbs that ask for related things. A word may sit in several
# groups; a query word expands to the union of its groups, at a discount. Only verbs: what
# nouns mean ("song" and "track", "refund" and "reimburse") the semantic vectors know
# (engine/catalog/embedding.py), and a table of them only fits the phrases it was written for.
_RELATED_GROUPS = """
send post deliver dispatch submit publish
create add new make insert register open build generate start
get fetch retrieve read show view lookup look info detail describe see
list all every browse enumerate recent
search find query lookup filter look
delete remove destroy erase drop purge trash
update edit modify change patch set rename alter adjust replace
cancel stop terminate void abort end
""".strip().splitlines()

ACTIONS = {
    "create": "create add new make insert register open build generate start post send publish submit "
              "upload invite buy purchase place leave share",
    "get": "get fetch retrieve read show view info detail describe download lookup",
    "list": "list all every browse enumerate recent",
    "search": "search find query filter",
    "delete": "delete remove destroy erase drop purge trash cancel",
    "update": "update edit modify change patch set rename alter adjust replace mark",
}


def _build_groups(lines: list[str]) -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for line in lines:
        group = {stem(w) for w in line.split()}
        for t in group:
            table.setdefault(t, set()).update(group)
    return {t: frozenset(g - {t}) for t, g in table.items()}


EQUIVALENTS: dict[str, frozenset[str]] = _build_groups(_EQUIVALENT_GROUPS)
SYNONYMS: dict[str, frozenset[str]] = _build_groups(_RELATED_GROUPS)
ACTION_OF_TERM: dict[str, str] = {}
for _action, _line in ACTIONS.items():
    for _w in _line.split():
        ACTION_OF_TERM.setdefault(stem(_w), _action)

LIST_TERMS = frozenset(stem(w) for w in ("list", "all", "every", "recent", "everyone"))

# Idioms rewritten before analysis: how people say it -> how APIs name it. (pattern, what a text
# must hold for it to match, replacement)
IDIOMS = [
    (r"\bset(?:ting)? up\b", "set", "create"),
    (r"\bkick(?:ing|s)? off\b", "kick", "start"),
    (r"\be-mail", "e-mail", "email"),
    (r"\bprs?\b", "pr", "pull request"),
    (r"\bdms?\b", "dm", "direct message"),
]


def apply_idioms(text: str) -> str:
    text = text.lower()
    for pattern, needed, replacement in IDIOMS:
        if needed in text:
            text = _pattern(pattern).sub(f" {replacement} ", text)
    return text


# Words an HTTP API puts in a method name or path that say nothing about what it does.
NOISE_TERMS = frozenset({"json", "v1", "v2", "v3", "v4", "api", "2010", "04", "01", "id", "ids", "gid"})
