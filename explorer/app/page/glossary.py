"""The page's jargon and a one-line gloss for each, so that a word a learner does not know explains itself where it
appears: in Markdown and HTML as <abbr title="gloss">word</abbr> (hover, or a long press on a phone, shows it; the
dotted underline says there is one), in plain-text places (a label, an info line) as "word (gloss)".

    GLOSSARY                 (term, pattern, gloss) in the order they are matched: the longer phrase first
    glossary(lang)           the same in a language (its glosses and its own words for the terms: the catalogues)
    glossed(markdown, lang)  every jargon word of a Markdown / HTML text wrapped in its <abbr>
    with_gloss(term)         "term (gloss)" for plain text
    unglossed(text)          the jargon words of a text that carry no gloss: [(term, the text around it)]
    GLOSS_JS                 page JavaScript: the same <abbr> around each jargon word of the texts a Run writes
                             (every Markdown and HTML output, as it changes), so that no tab has to gloss its own;
                             and the gloss as a tooltip (a dotted underline says there is one) of each table header
                             and each figure's drawn text (titles, axis and colour-bar titles, notes) with jargon;
                             in the language of the page's menu, read when it glosses
"""

from __future__ import annotations

import functools
import html
import json
import re

from ..i18n.words import ENGLISH, LANGS, NAMES, language, t

# The words of the page a secondary-school student may not know: (term, its English pattern, its catalogue key); the
# gloss is `glossary.<key>` of each language's catalogue (explorer/app/i18n/<lang>.glossary.toml), one line in plain
# words, and `glossary.words.<key>` how that language writes the term besides the English (matched too).
TERMS: tuple[tuple[str, str, str], ...] = (
    ("z W_O", r"z\s?W_O", "z_wo"),
    ("W_O", r"W_O(?:\^h)?", "w_o"),
    ("residual stream", r"residual streams?", "residual_stream"),
    ("layer's norm", r"(?:the )?(?:layer|block)'s norm|layer ?norm|LayerNorm|RMSNorm", "norm"),
    ("nats", r"\bnats?\b", "nats"),
    ("Spearman", r"\bSpearman(?:'s)?\b", "spearman"),
    ("logit", r"\blogits?\b", "logit"),
    ("softmax", r"\bsoftmax\b", "softmax"),
    ("unembedding", r"\bunembedding\b", "unembedding"),
)


@functools.cache
def glossary(lang: str = ENGLISH) -> tuple[tuple[str, str, str], ...]:
    """(term, pattern, gloss) in `lang`, in the order they are matched (the longer phrase first): the English pattern
    or the language's own words for the term, its gloss in the language."""
    out = []
    for term, pattern, key in TERMS:
        words = [w for w in t(f"glossary.words.{key}", lang).split("|") if w.strip()]
        own = "".join(f"|\\b{re.escape(w.strip())}\\b" for w in words)
        out.append((term, pattern + own, t(f"glossary.{key}", lang)))
    return tuple(out)


GLOSSARY = glossary(ENGLISH)  # the English: the layout is written in it (page.layout), then put in a language


@functools.cache
def _pattern(lang: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<t{i}>{p})" for i, (_, p, _) in enumerate(glossary(lang))), re.IGNORECASE)


_PATTERN = _pattern(ENGLISH)  # the English one (the page's layout is written in English)


_ABBR = re.compile(r"<abbr\b[^>]*>.*?</abbr>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")  # never glossed inside a tag
_CODE = re.compile(r"`[^`\n]+`")  # a code span with a jargon word is glossed whole: <abbr ...>`W_O`</abbr>


def _term(match: re.Match, lang: str) -> tuple[str, str]:
    i = int(match.lastgroup[1:])
    term, _, gloss = glossary(lang)[i]
    return term, gloss


def gloss_of(term: str, lang: str = ENGLISH) -> str:
    """The gloss of a term of GLOSSARY in `lang` (KeyError for another word)."""
    for name, _, gloss in glossary(language(lang)):
        if name == term:
            return gloss
    raise KeyError(term)


def with_gloss(term: str, shown: str | None = None, lang: str = ENGLISH) -> str:
    """"term (gloss)": for plain-text places, where no <abbr> renders."""
    return f"{shown or term} ({gloss_of(term, lang)})"


def abbr(term: str, shown: str | None = None, lang: str = ENGLISH) -> str:
    """One jargon word as <abbr title="its gloss">word</abbr> (the word escaped as text)."""
    return f'<abbr title="{html.escape(gloss_of(term, lang), quote=True)}">{html.escape(shown or term)}</abbr>'


def glossed(text: str, lang: str = ENGLISH) -> str:
    """`text` (Markdown or HTML, in `lang`) with every jargon word outside tags and existing <abbr>s wrapped in its
    <abbr title="gloss"> in `lang` (a code span holding one: the whole span)."""
    lang = language(lang)
    skip = [(m.start(), m.end()) for m in (*_ABBR.finditer(text), *_TAG.finditer(text))]
    spans = {m.start(): m for m in _CODE.finditer(text)}
    out, last = [], 0
    for m in _pattern(lang).finditer(text):
        if m.start() < last or any(a <= m.start() < b for a, b in skip):
            continue
        code = next((c for c in spans.values() if c.start() < m.start() < c.end()), None)
        whole = code or m
        gloss = _term(m, lang)[1]
        out += [text[last:whole.start()], f'<abbr title="{html.escape(gloss, quote=True)}">{whole.group(0)}</abbr>']
        last = whole.end()
    return "".join(out) + text[last:]


def unglossed(text: str, lang: str = ENGLISH) -> list[tuple[str, str]]:
    """The jargon words of `text` (in `lang`) that carry no gloss: neither inside <abbr title="..."> nor followed by
    " (...)" (a code span's word: the span followed by it)."""
    lang = language(lang)
    inside = [(m.start(), m.end()) for m in _ABBR.finditer(text) if 'title="' in m.group(0)]
    found = []
    for m in _pattern(lang).finditer(text):
        end = next((c.end() for c in _CODE.finditer(text) if c.start() < m.start() < c.end()), m.end())
        if any(a <= m.start() < b for a, b in inside) or re.match(r"\s?\(", text[end:end + 2]):
            continue
        found.append((_term(m, lang)[0], text[max(0, m.start() - 40):m.end() + 40]))
    return found


# Text nodes inside these elements of a Markdown / HTML output are glossed; never the output's own top level (Gradio's
# renderer owns those nodes), code, an <abbr> already there, a form field or a figure.
GLOSS_JS = """
// The page's language, read from its menu (a choice's label is the language's own name): its terms and glosses.
const glossaries = GLOSSARIES, languages = LANGUAGE_NAMES;
let terms = glossaries.en, pattern = null, patternOf = null;
const choose = () => {
  const menu = document.querySelector('#page-lang input');
  const lang = (menu && languages[menu.value]) || 'en';
  if (patternOf === lang) return;
  terms = glossaries[lang];
  pattern = new RegExp(terms.map((t) => '(' + t[0] + ')').join('|'), 'gi');
  patternOf = lang;
};
choose();
const inside = new Set(['P', 'LI', 'TD', 'TH', 'EM', 'STRONG', 'B', 'I', 'SPAN', 'A', 'H1', 'H2', 'H3', 'H4']);
const glossText = (node) => {
  choose();
  const text = node.nodeValue;
  pattern.lastIndex = 0;
  if (!pattern.test(text)) return;
  pattern.lastIndex = 0;
  const out = document.createDocumentFragment();
  let last = 0, m;
  while ((m = pattern.exec(text)) !== null) {
    const i = m.slice(1).findIndex((g) => g !== undefined);
    out.append(text.slice(last, m.index));
    const abbr = document.createElement('abbr');
    abbr.title = terms[i][1];
    abbr.textContent = m[0];
    out.append(abbr);
    last = m.index + m[0].length;
  }
  out.append(text.slice(last));
  node.replaceWith(out);
};
const glossIn = (root) => {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found = [];
  while (walker.nextNode()) {
    const node = walker.currentNode, parent = node.parentElement;
    if (parent && parent !== root && inside.has(parent.tagName) &&
        !parent.closest('abbr, code, pre, textarea, svg, .js-plotly-plot')) found.push(node);
  }
  found.forEach(glossText);
};
// A table header or a figure's text is drawn by Gradio's table or by Plotly, which rewrite it: its words are left as
// they are, the gloss goes beside them (a header's title; an SVG <title> in the text's group), once per word.
const LABELS = 'th, svg text.gtitle, svg text.xtitle, svg text.ytitle, svg .cbtitle text, svg text.annotation-text, ' +
  'svg text.legendtext';
const glossesOf = (text) => {
  choose();
  const lines = [];
  let m;
  pattern.lastIndex = 0;
  while ((m = pattern.exec(text)) !== null) {
    const i = m.slice(1).findIndex((g) => g !== undefined);
    const line = m[0] + ': ' + terms[i][1];
    if (!lines.includes(line)) lines.push(line);
  }
  return lines.join('\\n');
};
const glossLabel = (el) => {
  const gloss = glossesOf(el.textContent);
  if (!gloss) return;
  if (el.namespaceURI !== 'http://www.w3.org/2000/svg') {
    if (el.title !== gloss) el.title = gloss;
    el.classList.add('glossed');
    return;
  }
  const group = el.parentNode;
  let tip = [...group.children].find((c) => c.tagName === 'title');
  if (!tip) { tip = document.createElementNS('http://www.w3.org/2000/svg', 'title'); group.prepend(tip); }
  if (tip.textContent !== gloss) tip.textContent = gloss;
  el.classList.add('glossed');
  el.style.pointerEvents = 'all';  // Plotly's text layer lets the pointer through: the gloss is read by hovering
  el.style.textDecoration = 'underline dotted';
};
const labelsIn = (root) => {
  const outside = (el) => !el.closest('.prose');
  if (root.matches && root.matches(LABELS) && outside(root)) glossLabel(root);
  root.querySelectorAll(LABELS).forEach((el) => { if (outside(el)) glossLabel(el); });
};
const glossed = new Set(), labelled = new Set();
let queued = false;
const flush = () => {
  queued = false;
  glossed.forEach(glossIn); glossed.clear();
  labelled.forEach(labelsIn); labelled.clear();
};
new MutationObserver((records) => {
  for (const r of records) {
    const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    if (!el || el.tagName === 'title' || el.closest('title')) continue;  // our own tooltips
    const prose = el.closest('.prose');  // Markdown (its tables too): <abbr>s in the text
    if (prose) { glossed.add(prose); continue; }
    const label = el.closest(LABELS + ', .js-plotly-plot, table');
    if (label) { labelled.add(label); continue; }
    el.querySelectorAll('table, .js-plotly-plot').forEach((t) => labelled.add(t));
    el.querySelectorAll('.prose').forEach((p) => glossed.add(p));
  }
  if ((glossed.size || labelled.size) && !queued) { queued = true; requestAnimationFrame(flush); }
}).observe(document.body, {childList: true, subtree: true, characterData: true});
document.querySelectorAll('.prose').forEach(glossIn);
labelsIn(document.body);
""".replace("GLOSSARIES", json.dumps({lang: [[p, gloss] for _, p, gloss in glossary(lang)] for lang in LANGS},
                                       ensure_ascii=False)).replace("LANGUAGE_NAMES", json.dumps(
    {name: lang for lang, name in NAMES.items()}, ensure_ascii=False))
