"""Self-contained HTML from plain data: escaping, the shared stylesheet, tables, and the page that
browses an evaluation (``vx eval --html``, ``vx report EVAL.json``, ``Evaluation._repr_html_``).

Everything here takes plain data (dicts, lists, strings) and returns strings; it imports nothing else
of vx, so every layer may use it. Candidate outputs and op messages are hostile text: every string
that reaches a page goes through :func:`esc` (HTML) or :func:`script_json` (data for the page's
script, which only ever writes it with ``textContent``). Pages load nothing from the network: the
stylesheet and the script are inline, and the page works offline (without JavaScript it shows every
item, capsules open).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vx.text import json_dumps

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

CSS = """
:root{--fg:#1d232a;--muted:#6a737d;--line:#d8dee4;--soft:#f6f8fa;--fail:#b31d28;--pass:#22863a;--warn:#b08800}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:var(--fg);line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid var(--line);padding-bottom:.2em}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em}
pre{background:var(--soft);padding:.8em;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-word}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid var(--line);padding:.3em .6em;text-align:left;vertical-align:top}th{background:var(--soft)}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.prose{min-width:18em;max-width:40em}
.muted{color:var(--muted)}.fail,.drawback{color:var(--fail);font-weight:600}.pass{color:var(--pass);font-weight:600}
.clean{color:var(--pass)}.abstain{color:var(--muted)}.audit{background:#fff8c5;padding:.5em .8em;border-radius:6px}
ul.tree{list-style:none;padding-left:1.2em;border-left:1px dotted #aaa;margin:.2em 0}ul.tree li{margin:.15em 0}
.kv td{text-align:left}.kv td:first-child{color:var(--muted)}
details{margin:.4em 0}summary{cursor:pointer}
.filters{display:flex;flex-wrap:wrap;gap:.6em 1.2em;align-items:center;background:var(--soft);padding:.6em .8em;
border-radius:6px;position:sticky;top:0}
.filters label{white-space:nowrap}.filters select,.filters input{font:inherit}
table.items{width:100%}table.items tbody.item>tr.head{cursor:pointer}
table.items tbody.item>tr.head:hover{background:#f0f6ff}
table.items tr.capsule>td{background:#fcfcfd}
.capsule pre{max-height:24em;overflow:auto}
.tag{display:inline-block;border:1px solid var(--line);border-radius:4px;padding:0 .35em;margin:0 .2em .2em 0;
font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em;background:#fff}
.tag.fired{border-color:var(--fail);color:var(--fail)}
.bad{background:#fff5f5}
.scroll{overflow-x:auto;max-width:100%}.scroll>table{margin:.3em 0}
svg{max-width:100%;height:auto}
td code,li code,summary code,p code{overflow-wrap:anywhere}
nav.toc{background:var(--soft);border-radius:6px;padding:.5em .9em;margin:1em 0}
nav.toc ol{margin:.3em 0;padding-left:1.4em;columns:2 16em}nav.toc a{color:#0366d6;text-decoration:none}
.flex{display:flex;flex-wrap:wrap;gap:1em 3em}
@media (max-width:600px){body{margin:1em auto;padding:0 .6em;font-size:15px}h1{font-size:1.3em}
h2{font-size:1.15em}th,td{padding:.25em .4em}td.prose{min-width:12em}pre{padding:.5em}}
"""


# For notebook displays: scoped to .vx-repr, so the notebook's own page keeps its styles.
NOTEBOOK_CSS = """
.vx-repr table{border-collapse:collapse;margin:.4em 0}.vx-repr th,.vx-repr td{border:1px solid #d8dee4;
padding:.2em .5em;text-align:left;vertical-align:top}.vx-repr td.num,.vx-repr th.num{text-align:right}
.vx-repr .fail,.vx-repr .drawback{color:#b31d28;font-weight:600}.vx-repr .pass{color:#22863a;font-weight:600}
.vx-repr .clean{color:#22863a}.vx-repr .abstain,.vx-repr .muted{color:#6a737d}
.vx-repr ul.tree{list-style:none;padding-left:1.2em;border-left:1px dotted #aaa}
.vx-repr .tag{border:1px solid #b31d28;color:#b31d28;border-radius:4px;padding:0 .3em;margin-right:.2em}
"""


def notebook(html_body: str) -> str:
    """An HTML fragment for a notebook's rich display (scoped styles, no script)."""
    return f"<div class='vx-repr'><style>{NOTEBOOK_CSS}</style>{html_body}</div>"


def clean_text(x: Any) -> str:
    """`x` as text that any page can hold: valid Unicode (lone surrogates replaced), no control
    characters other than tab and newline (each shown as U+FFFD)."""
    text = x if isinstance(x, str) else str(x)
    text = _SURROGATE.sub("\ufffd", text)
    return _CONTROL.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))


def esc(x: Any) -> str:
    """Escape any value for HTML text or a quoted attribute value."""
    return html.escape(clean_text(x), quote=True)


def num(x: Any, digits: int = 3) -> str:
    """A number for a table cell: fixed digits for floats, — for missing / NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return esc(x)


def script_json(data: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: no ``</script>``, ``<!--`` or line
    separators can close or confuse it (``<``, ``>``, ``&``, U+2028 and U+2029 are \\u-escaped)."""
    text = json_dumps(_plain(data), allow_nan=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _plain(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, str):
        return clean_text(x)
    if isinstance(x, Mapping):
        return {clean_text(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], *, kinds: Sequence[str] | None = None, cls: str = ""
) -> str:
    """An HTML table. Cells are *already HTML* (escape with :func:`esc` / :func:`num`). `kinds` names
    each column's alignment: "num" (right-aligned, no wrapping), "prose" (left, a roomy minimum
    width: descriptions and messages) or "" (left)."""
    kinds = list(kinds or [""] * len(headers))

    def attr(k: str) -> str:
        return f" class='{k}'" if k else ""

    head = "".join(f"<th{attr(kinds[i] if kinds[i] == 'num' else '')}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{attr(kinds[i] if i < len(kinds) else '')}>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    # in a scrolling box: a table wider than a phone scrolls by itself, the page does not
    return f"<div class='scroll'><table{attr(cls)}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display), or None where matplotlib is not
    installed: a page then goes without its figures."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


def svg(fig: Any) -> str:
    """A matplotlib figure as inline SVG (closed afterwards), without the XML prolog and metadata."""
    import io

    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.find("<svg") :]
    a, b = text.find("<metadata>"), text.find("</metadata>")
    return text[:a] + text[b + len("</metadata>") :] if a >= 0 and b > a else text


def inline_markdown(text: Any) -> str:
    """Escape `text`, then render its `code spans` as <code> (op descriptions use backticks)."""
    parts = clean_text(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return esc(text)
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else esc(p) for i, p in enumerate(parts))


def page(title: str, body: str, *, script: str = "", data: Any = None) -> str:
    """A complete page: inline stylesheet, `body` (HTML), optional inline data and script."""
    blob = f"<script type='application/json' id='vx-data'>{script_json(data)}</script>" if data is not None else ""
    code = f"<script>{script}</script>" if script else ""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{body}{blob}{code}</body></html>"
    )


VERDICT_CLASS = {"drawback": "drawback", "clean": "clean", "abstain": "abstain", "fail": "fail", "pass": "pass"}


def verdict_html(v: Any) -> str:
    v = "" if v is None else str(v)
    return f"<span class='{VERDICT_CLASS.get(v, '')}'>{esc(v.upper()) if v else '—'}</span>"


def trace_html(node: Mapping[str, Any] | None) -> str:
    """An explained expression (``TraceNode.as_dict()``) as a nested list."""
    if not node:
        return ""

    def one(n: Mapping[str, Any]) -> str:
        text = f"<code>{esc(n.get('text', ''))}</code> {verdict_html(n.get('verdict'))}"
        if n.get("message"):
            text += f" <span class='muted'>— {esc(n['message'])}</span>"
        if n.get("error"):
            text += f" <span class='abstain'>(error: {esc(n['error'])})</span>"
        kids = n.get("children") or []
        inner = "<ul class='tree'>" + "".join(one(c) for c in kids) + "</ul>" if kids else ""
        return f"<li>{text}{inner}</li>"

    return "<ul class='tree'>" + one(node) + "</ul>"


# --------------------------------------------------------------------------------------------
# grading one output (Grade._repr_html_)


def grade_html(grade: Mapping[str, Any]) -> str:
    """A verifier's verdict on one output (``Grade.as_dict()``): verdict, drawbacks, trace."""
    out = f"<div><b>verdict</b> {verdict_html(grade.get('verdict'))}"
    drawbacks = grade.get("drawbacks") or []
    if drawbacks:
        out += (
            "<ul>"
            + "".join(
                f"<li><code>{esc(d['op'])}</code>" + (f": {esc(d['message'])}" if d.get("message") else "") + "</li>"
                for d in drawbacks
            )
            + "</ul>"
        )
    root = grade.get("root")
    if root:
        out += (
            f"<div>root <code>{esc(root.get('text'))}</code> {verdict_html(root.get('verdict'))}"
            + (f" <span class='muted'>— {esc(root['message'])}</span>" if root.get("message") else "")
            + "</div>"
        )
    return out + trace_html(grade.get("trace")) + "</div>"


# --------------------------------------------------------------------------------------------
# browsing an evaluation

METRIC_COLUMNS = (
    ("accuracy", "accuracy"),
    ("recall-weighted", "recall_weighted"),
    ("balanced", "balanced_accuracy"),
    ("fail recall", "fail_recall"),
    ("pass recall", "pass_recall"),
    ("κ", "kappa"),
    ("coverage", "coverage"),
)


def metrics_table(metrics: Mapping[str, Any] | None) -> str:
    if not metrics:
        return "<p class='muted'>unlabeled split: no agreement figures</p>"
    head = [h for h, _ in METRIC_COLUMNS] + ["n"]
    row = [num(metrics.get(k)) for _, k in METRIC_COLUMNS] + [num(metrics.get("n"))]
    c = metrics.get("confusion") or {}
    return (
        table(head, [row], kinds=["num"] * len(head))
        + f"<p>confusion: <span class='fail'>FAIL &amp; fail {num(c.get('tp'))}</span> · FAIL &amp; pass "
        f"{num(c.get('fp'))} (false alarm) · <span class='pass'>PASS &amp; pass {num(c.get('tn'))}</span> · "
        f"PASS &amp; fail {num(c.get('fn'))} (missed) · abstained {num(metrics.get('abstained'))}</p>"
    )


def _disagrees(item: Mapping[str, Any]) -> bool:
    label = item.get("label")
    return label is not None and (item.get("verdict") == "fail") != (label == "fail")


def capsule_html(item: Mapping[str, Any], op_order: Sequence[str]) -> str:
    """An item's failure capsule: the checks that failed with their messages, every op's verdict,
    op errors, the explained expression and the output itself."""
    ops = item.get("ops") or {}
    parts = []
    drawbacks = item.get("drawbacks") or []
    if drawbacks:
        parts.append(
            "<b>failed checks</b><ul>"
            + "".join(
                f"<li><code>{esc(d.get('op'))}</code>"
                + (f": {esc(d['message'])}" if d.get("message") else "")
                + "</li>"
                for d in drawbacks
            )
            + "</ul>"
        )
    elif item.get("verdict") == "fail":
        parts.append("<b>failed checks</b>: <span class='muted'>none recorded</span>")
    else:
        parts.append("<span class='muted'>no check failed on a path to FAIL</span>")
    rows = []
    for name in op_order:
        o = ops.get(name)
        if o is None:
            continue
        rows.append(
            [
                f"<code>{esc(name)}</code>",
                verdict_html(o.get("verdict")),
                esc(o.get("message") or ""),
                esc(o.get("error") or ""),
            ]
        )
    if rows:
        parts.append(
            "<details open><summary>every op's verdict</summary>"
            + table(["op", "verdict", "message", "error"], rows, kinds=["", "", "prose", "prose"])
            + "</details>"
        )
    if item.get("trace"):
        parts.append("<details><summary>explained expression</summary>" + trace_html(item.get("trace")) + "</details>")
    if item.get("output") is not None:
        parts.append(f"<details><summary>output</summary><pre>{esc(item['output'])}</pre></details>")
    return "".join(parts)


def eval_body(data: Mapping[str, Any], *, max_items: int | None = None, interactive: bool = True) -> str:
    """The body of an evaluation page (``Evaluation.as_dict()``, schema vx-eval/1)."""
    items = list(data.get("items") or [])
    shown = items if max_items is None else items[:max_items]
    op_order = [o.get("op") for o in data.get("ops") or []] or sorted(
        {k for it in items for k in (it.get("ops") or {})}
    )
    title = page_title(data)
    label_name = data.get("label_name") or "labels"
    expression = data.get("expression")
    out = [
        f"<h1>{esc(title)}</h1>",
        f"<p class='muted'>{esc(data.get('n', len(items)))} items"
        + (f" · expression <code>{esc(expression)}</code>" if expression else "")
        + "</p>",
    ]
    for line in data.get("environment") or []:
        out.append(f"<p class='muted'>{esc(line)}</p>")
    if data.get("pass_at_k"):
        out.append("<h2>pass@k</h2>" + pass_at_k_table(data["pass_at_k"]))
    out.append(f"<h2>Agreement with {esc(label_name)}</h2>" + metrics_table(data.get("metrics")))
    op_rows = []
    for o in data.get("ops") or []:
        op_rows.append(
            [
                f"<code>{esc(o.get('op'))}</code>"
                + (" <span class='muted'>(root)</span>" if o.get("op") == data.get("root") else ""),
                esc(o.get("tier") or ""),
                num(o.get("coverage")),
                num(o.get("fire_rate")),
                num(o.get("accuracy")),
                num(o.get("n_labeled")),
            ]
        )
    if op_rows:
        out.append(
            "<h2>Ops</h2>"
            + table(
                ["op", "tier", "coverage", "fires", "accuracy", "n labeled"],
                op_rows,
                kinds=["", "", "num", "num", "num", "num"],
            )
        )
    out.append(f"<h2>Items ({len(items)})</h2>")
    if interactive:
        opts = "".join(f"<option value='{esc(n)}'>{esc(n)}</option>" for n in op_order)
        out.append(
            "<div class='filters' id='filters'>"
            "<label>verdict <select id='f-verdict'><option value=''>any</option><option>fail</option>"
            "<option>pass</option><option>abstain</option></select></label>"
            "<label>label <select id='f-label'><option value=''>any</option><option>fail</option>"
            "<option>pass</option><option value='none'>unlabeled</option></select></label>"
            "<label>agreement <select id='f-agree'><option value=''>any</option><option value='disagree'>disagrees"
            "</option><option value='agree'>agrees</option></select></label>"
            f"<label>op fired <select id='f-op'><option value=''>any</option>{opts}</select></label>"
            "<label>search <input id='f-text' type='search' placeholder='item or task id'></label>"
            "<button type='button' id='f-expand'>expand all</button>"
            "<button type='button' id='f-collapse'>collapse all</button>"
            f"<span id='f-count' class='muted' data-visible='{len(shown)}'>{len(shown)} of {len(items)} items</span>"
            "</div>"
        )
    if max_items is not None and len(items) > len(shown):
        out.append(f"<p class='muted'>showing the first {len(shown)} of {len(items)} items</p>")
    body = [
        "<div class='scroll'><table class='items' id='items'><thead><tr><th>item</th><th>task</th>"
        f"<th>{'label' if label_name == 'labels' else esc(label_name)}</th>"
        "<th>verdict</th><th>fired ops</th></tr></thead>"
    ]
    for k, it in enumerate(shown):
        ops = it.get("ops") or {}
        fired = [n for n in op_order if (ops.get(n) or {}).get("verdict") == "drawback"]
        tags = "".join(f"<span class='tag fired'>{esc(n)}</span>" for n in fired) or "<span class='muted'>—</span>"
        label = it.get("label")
        attrs_ = (
            f" data-verdict='{esc(it.get('verdict') or '')}' data-label='{esc(label or 'none')}'"
            f" data-agree='{'disagree' if _disagrees(it) else 'agree'}'"
            f" data-fired='{esc(' '.join(str(op_order.index(n)) for n in fired))}'"
            f" data-text='{esc((str(it.get('id', '')) + ' ' + str(it.get('task', ''))).lower())}'"
        )
        hidden = " hidden" if interactive else ""
        body.append(
            f"<tbody class='item{' bad' if _disagrees(it) else ''}' id='item-{k}'{attrs_}>"
            f"<tr class='head'><td><code>{esc(it.get('id'))}</code></td><td><code>{esc(it.get('task'))}</code></td>"
            f"<td>{verdict_html(label)}</td><td>{verdict_html(it.get('verdict'))}</td><td>{tags}</td></tr>"
            f"<tr class='capsule'{hidden}><td colspan='5'>{capsule_html(it, op_order)}</td></tr></tbody>"
        )
    body.append("</table></div>")
    out.append("".join(body))
    if interactive:
        out.append("<noscript><style>tr.capsule[hidden]{display:table-row}</style></noscript>")
    return "".join(out)


# Filters rows by data attributes; state lives in the URL fragment (#verdict=fail&op=crash), so a
# filtered view can be bookmarked. Writes only attributes, classes and textContent.
EVAL_SCRIPT = r"""
(function(){
  var $=function(id){return document.getElementById(id);};
  var data=JSON.parse($('vx-data').textContent);
  var ops=data.op_order||[];
  var keys={verdict:'f-verdict',label:'f-label',agree:'f-agree',op:'f-op',q:'f-text'};
  var items=Array.prototype.slice.call(document.querySelectorAll('tbody.item'));
  function state(){var s={};for(var k in keys){s[k]=$(keys[k]).value;}return s;}
  function apply(){
    var s=state(),shown=0,opIndex=s.op?String(ops.indexOf(s.op)):'';
    items.forEach(function(tb){
      var ok=(!s.verdict||tb.dataset.verdict===s.verdict)&&(!s.label||tb.dataset.label===s.label)
        &&(!s.agree||tb.dataset.agree===s.agree)
        &&(!s.op||(tb.dataset.fired?tb.dataset.fired.split(' '):[]).indexOf(opIndex)>=0)
        &&(!s.q||tb.dataset.text.indexOf(s.q.toLowerCase())>=0);
      tb.hidden=!ok; if(ok){shown++;}
    });
    var c=$('f-count'); c.dataset.visible=String(shown); c.textContent=shown+' of '+items.length+' items';
  }
  function toHash(){var s=state(),p=[];for(var k in s){if(s[k]){p.push(k+'='+encodeURIComponent(s[k]));}}
    var h=p.join('&');
    if(('#'+h)!==location.hash&&!(h===''&&location.hash==='')){
      history.replaceState(null,'',h?'#'+h:location.pathname+location.search);}}
  function fromHash(){var h=location.hash.replace(/^#/,'');var s={};
    h.split('&').forEach(function(kv){if(!kv){return;}var i=kv.indexOf('=');if(i<0){return;}
      try{s[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));}catch(e){}});
    for(var k in keys){var el=$(keys[k]),v=s[k]||'';
      if(el.tagName==='SELECT'&&v&&!Array.prototype.some.call(el.options,function(o){return o.value===v;})){v='';}
      el.value=v;}
    var item=s.item;
    if(item){var tb=document.getElementById(item); if(tb){tb.querySelector('tr.capsule').hidden=false;}}
  }
  items.forEach(function(tb){tb.querySelector('tr.head').addEventListener('click',function(){
    var cap=tb.querySelector('tr.capsule'); cap.hidden=!cap.hidden;});});
  for(var k in keys){$(keys[k]).addEventListener(k==='q'?'input':'change',function(){apply();toHash();});}
  $('f-expand').addEventListener('click',function(){items.forEach(function(tb){if(!tb.hidden){tb.querySelector('tr.capsule').hidden=false;}});});
  $('f-collapse').addEventListener('click',function(){items.forEach(function(tb){tb.querySelector('tr.capsule').hidden=true;});});
  window.addEventListener('hashchange',function(){fromHash();apply();});
  fromHash(); apply(); document.body.dataset.ready='1';
})();
"""


def eval_page(data: Mapping[str, Any]) -> str:
    """A self-contained page browsing an evaluation: every item, filterable by verdict, label,
    agreement and fired op, each expandable to its failure capsule."""
    items = data.get("items") or []
    op_order = [o.get("op") for o in data.get("ops") or []] or sorted(
        {k for it in items for k in (it.get("ops") or {})}
    )
    return page(page_title(data), eval_body(data), script=EVAL_SCRIPT, data={"op_order": op_order})


def page_title(data: Mapping[str, Any]) -> str:
    """An evaluation page's title: the document's own, else its family and split (what is known)."""
    if data.get("title"):
        return str(data["title"])
    named = " · ".join(str(x) for x in (data.get("family"), data.get("split")) if x)
    return f"vx eval — {named}" if named else "vx eval"


def pass_at_k_table(passk: Mapping[str, Any]) -> str:
    """vx-estimated pass@k beside the true one (``{"estimated": {"pass@1": …}, "true": {…} | None}``)."""
    est, true = passk.get("estimated") or {}, passk.get("true")
    on_truth = passk.get("estimated_on_truth_tasks")  # some tasks have no ground truth: compare like with like
    head = ["", "vx estimate"] + (["true (hidden tests)"] if true else [])
    rows = [[esc(k), num((on_truth or est).get(k))] + ([num(true.get(k))] if true else []) for k in est]
    note = (
        (
            "<p class='muted'>on the tasks the hidden tests can grade; vx's estimate on all tasks: "
            + ", ".join(f"{esc(k)} {num(v)}" for k, v in est.items())
            + "</p>"
        )
        if on_truth and true
        else ""
    )
    return table(head, rows, kinds=[""] + ["num"] * (len(head) - 1)) + note


__all__ = [
    "CSS",
    "NOTEBOOK_CSS",
    "notebook",
    "capsule_html",
    "clean_text",
    "esc",
    "eval_body",
    "eval_page",
    "grade_html",
    "inline_markdown",
    "pyplot",
    "svg",
    "metrics_table",
    "num",
    "page",
    "page_title",
    "pass_at_k_table",
    "script_json",
    "table",
    "trace_html",
    "verdict_html",
]
