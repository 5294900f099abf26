"""The page's jargon and a one-line gloss for each, so that a word a learner does not know explains itself where it
appears: in Markdown and HTML as <abbr title="gloss">word</abbr> (hover, or a long press on a phone, shows it; the
dotted underline says there is one), in plain-text places (a label, an info line) as "word (gloss)".

    GLOSSARY                 (term, pattern, gloss) in the order they are matched: the longer phrase first
    glossed(markdown)        every jargon word of a Markdown / HTML text wrapped in its <abbr>
    with_gloss(term)         "term (gloss)" for plain text
    unglossed(text)          the jargon words of a text that carry no gloss: [(term, the text around it)]
    GLOSS_JS                 page JavaScript: the same <abbr> around each jargon word of the texts a Run writes
                             (every Markdown and HTML output, as it changes), so that no tab has to gloss its own;
                             and the gloss as a tooltip (a dotted underline says there is one) of each table header
                             and each figure's drawn text (titles, axis and colour-bar titles, notes) with jargon
"""

from __future__ import annotations

import html
import json
import re

# The words of the page a secondary-school student may not know, each with its gloss (one line, plain words).
GLOSSARY: tuple[tuple[str, str, str], ...] = (
    ("z W_O", r"z\s?W_O", "the head's mix of values through its output table: what the head adds to the token"),
    ("W_O", r"W_O(?:\^h)?", ("the head's output table, learned in training: it turns the head's mix of values back "
                             "into the token's full size")),
    ("residual stream", r"residual streams?", ("the running list of numbers each token carries up through the "
                                               "layers; every head and MLP adds its part to it")),
    ("layer's norm", r"(?:the )?(?:layer|block)'s norm|layer ?norm|LayerNorm|RMSNorm",
     "a step that rescales each token's numbers to a standard size before a block reads them"),
    ("nats", r"\bnats?\b", "a unit of surprise, −ln(probability): 0 = certain, 0.69 = a coin toss, 2.3 = 1 in 10"),
    ("Spearman", r"\bSpearman(?:'s)?\b", "a rank correlation: +1 = the same order, 0 = unrelated, −1 = reversed"),
    ("logit", r"\blogits?\b", "the model's raw score for a token, before softmax turns the scores into probabilities"),
    ("softmax", r"\bsoftmax\b", ("turns scores into weights: e to the power of each score, divided by their sum "
                                 "(all positive, adding up to 1)")),
    ("unembedding", r"\bunembedding\b", ("the model's last table: it turns a token's numbers into one score per "
                                         "word of its vocabulary")),
)
_PATTERN = re.compile("|".join(f"(?P<t{i}>{p})" for i, (_, p, _) in enumerate(GLOSSARY)), re.IGNORECASE)
_ABBR = re.compile(r"<abbr\b[^>]*>.*?</abbr>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")  # never glossed inside a tag
_CODE = re.compile(r"`[^`\n]+`")  # a code span with a jargon word is glossed whole: <abbr ...>`W_O`</abbr>


def _term(match: re.Match) -> tuple[str, str]:
    i = int(match.lastgroup[1:])
    return GLOSSARY[i][0], GLOSSARY[i][2]


def gloss_of(term: str) -> str:
    """The gloss of a term of GLOSSARY (KeyError for another word)."""
    for name, _, gloss in GLOSSARY:
        if name == term:
            return gloss
    raise KeyError(term)


def with_gloss(term: str, shown: str | None = None) -> str:
    """"term (gloss)": for plain-text places, where no <abbr> renders."""
    return f"{shown or term} ({gloss_of(term)})"


def abbr(term: str, shown: str | None = None) -> str:
    """One jargon word as <abbr title="its gloss">word</abbr> (the word escaped as text)."""
    return f'<abbr title="{html.escape(gloss_of(term), quote=True)}">{html.escape(shown or term)}</abbr>'


def glossed(text: str) -> str:
    """`text` (Markdown or HTML) with every jargon word outside tags and existing <abbr>s wrapped in its
    <abbr title="gloss"> (a code span holding one: the whole span)."""
    skip = [(m.start(), m.end()) for m in (*_ABBR.finditer(text), *_TAG.finditer(text))]
    spans = {m.start(): m for m in _CODE.finditer(text)}
    out, last = [], 0
    for m in _PATTERN.finditer(text):
        if m.start() < last or any(a <= m.start() < b for a, b in skip):
            continue
        code = next((c for c in spans.values() if c.start() < m.start() < c.end()), None)
        whole = code or m
        gloss = _term(m)[1]
        out += [text[last:whole.start()], f'<abbr title="{html.escape(gloss, quote=True)}">{whole.group(0)}</abbr>']
        last = whole.end()
    return "".join(out) + text[last:]


def unglossed(text: str) -> list[tuple[str, str]]:
    """The jargon words of `text` that carry no gloss: neither inside <abbr title="..."> nor followed by " (...)"
    (a code span's word: the span followed by it)."""
    inside = [(m.start(), m.end()) for m in _ABBR.finditer(text) if 'title="' in m.group(0)]
    found = []
    for m in _PATTERN.finditer(text):
        end = next((c.end() for c in _CODE.finditer(text) if c.start() < m.start() < c.end()), m.end())
        if any(a <= m.start() < b for a, b in inside) or re.match(r"\s?\(", text[end:end + 2]):
            continue
        found.append((_term(m)[0], text[max(0, m.start() - 40):m.end() + 40]))
    return found


# Text nodes inside these elements of a Markdown / HTML output are glossed; never the output's own top level (Gradio's
# renderer owns those nodes), code, an <abbr> already there, a form field or a figure.
GLOSS_JS = """
const terms = TERMS;
const pattern = new RegExp(terms.map((t) => '(' + t[0] + ')').join('|'), 'gi');
const inside = new Set(['P', 'LI', 'TD', 'TH', 'EM', 'STRONG', 'B', 'I', 'SPAN', 'A', 'H1', 'H2', 'H3', 'H4']);
const glossText = (node) => {
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
""".replace("TERMS", json.dumps([[pattern, gloss] for _, pattern, gloss in GLOSSARY], ensure_ascii=False))
