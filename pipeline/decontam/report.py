"""The auditor's report: one static HTML page (no server, no network, opens from disk).

It states the reference's version (pipeline.kernelbench.fingerprint and its source), the thresholds and the
decision rule, counts per decision, a sortable table of every candidate, and for each flagged task a side-by-side
diff against its nearest reference problem with the score of every view. The same facts sit in
contamination.parquet and report_meta.json beside it (queryable in DuckDB).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import html
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa

from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import RefProblem, fingerprint

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;cursor:pointer;user-select:none} th.asc:after{content:" \\25B2"} th.desc:after{content:" \\25BC"}
tr.flag td{background:#fde8e8} code{font-size:12px}
table.diff{font-family:monospace;font-size:12px} .diff_add{background:#cfc} .diff_chg{background:#ff8}
.diff_sub{background:#fbb} td.diff_header{background:#eee;text-align:right}
details{margin:.6em 0} summary{cursor:pointer;font-weight:600}
.kv td:first-child{font-weight:600}
"""

# Click a header to sort; numbers sort numerically. No external scripts: the page works offline.
_JS = """
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = !th.classList.contains('asc');
      t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc ? 'asc' : 'desc');
      rows.sort(function(a, b){
        var x = a.cells[col].getAttribute('data-v') || a.cells[col].textContent;
        var y = b.cells[col].getAttribute('data-v') || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});
"""

_COLUMNS = [
    "task_id",
    "contaminated",
    "reason",
    "view",
    "nearest_ref",
    "score",
    "nearest_canon",
    "nearest_ops",
    "nearest_raw",
    "semantic_score",
    "semantic_ref",
    "near_variant",
    "ast_similarity",
    "md5_match",
    "canon_jaccard",
    "ops_jaccard",
    "raw_jaccard",
    "lsh_hits",
]


def _codes(candidates) -> dict[str, str]:
    if candidates is None:
        return {}
    if isinstance(candidates, pa.Table):
        return {
            str(t): c for t, c in zip(candidates.column("task_id").to_pylist(), candidates.column("code").to_pylist())
        }
    return {str(t): c for t, c in candidates}


def _cell(v) -> str:
    if isinstance(v, float):
        return f'<td data-v="{v:.6f}">{v:.3f}</td>'
    if isinstance(v, bool):
        return f'<td data-v="{int(v)}">{"yes" if v else ""}</td>'
    return f"<td>{html.escape(str(v))}</td>"


def _evidence_html(raw: str) -> str:
    """Functional evidence (max difference, tensor mapping) or a near-variant's difference, and the two normalized
    graphs side by side."""
    if not raw:
        return ""
    try:
        ev = json.loads(raw)
    except ValueError:
        return f"<pre class='evidence'>{html.escape(raw[:2000])}</pre>"
    esc = html.escape
    out = [f"<div class='evidence' data-kind='{esc(str(ev.get('kind', '')))}'>"]
    if ev.get("kind") == "functional":
        out.append(
            f"<p>functional evidence: outputs of <b>{esc(str(ev.get('ref')))}</b> and the task on the same "
            f"inputs differ by at most <b class='max-diff'>{ev.get('max_abs_diff')}</b> (output scale "
            f"{ev.get('ref_scale')}, tolerance {esc(str(ev.get('tolerance')))}"
            f"{', decided in ' + esc(str(ev['precision'])) if ev.get('precision') == 'float64' else ''})</p>"
        )
        if any(len(m) == 3 and "*" in str(m[2]) for m in ev.get("mapping") or []):
            out.append(
                "<p class='scaled'>ties marked <code>*ratio</code>: the task's tensor is the reference's times the "
                "ratio of the scales the two constructors make them at (a constant folded into the weights)</p>"
            )
        if any(len(m) == 3 and "+=" in str(m[2]) for m in ev.get("mapping") or []):
            out.append(
                "<p class='shifted'>ties marked <code>+=offset</code>: the task's tensor is the reference's plus the "
                "difference of the values the two constructors make them at (a constant folded into a bias)</p>"
            )
        if ev.get("rebuilt_at"):
            out.append(
                f"<p class='rebuilt'>the problem built at the task's constructor arguments "
                f"<code>{esc(str(ev['rebuilt_at']))}</code> (its own get_init_inputs replaced)</p>"
            )
        if ev.get("rebuilt_sizes"):
            out.append(
                f"<p class='rebuilt'>the problem's module-level sizes its model reads set to the task's input sizes "
                f"<code>{esc(str(ev['rebuilt_sizes']))}</code></p>"
            )
        mapping = ev.get("mapping") or []
        if mapping:
            out.append(
                "<table class='mapping'><tr><th>task tensor</th><th>reference tensor</th><th>matched by</th>"
                "</tr>"
                + "".join(
                    f"<tr><td>{esc(str(m[0]))}</td><td>{esc(str(m[1]))}</td><td>{esc(str(m[2]))}</td></tr>"
                    for m in mapping
                    if len(m) == 3
                )
                + "</table>"
            )
    if ev.get("kind") == "structure":
        out.append(
            f"<p>the same whole graph as <b>{esc(str(ev.get('ref')))}</b> (semantic {ev.get('semantic')}), sizes "
            f"aside; no run could compare the outputs: {esc(str(ev.get('confirmation')))} "
            f"{esc(str(ev.get('error', '')))}</p>"
        )
    if ev.get("difference", {}).get("level") == "axes":
        d = ev["difference"]
        out.append(
            f"<p>the same graph as {esc(str(ev.get('ref', '')))} with its reductions over other axes: "
            f"{esc(str(d.get('candidate_axes')))} against {esc(str(d.get('reference_axes')))}</p>"
        )
    elif ev.get("difference"):
        d = ev["difference"]
        out.append(
            f"<p>difference from {esc(str(ev.get('ref', '')))}: added {esc(', '.join(d.get('added', [])))}"
            f"; removed {esc(', '.join(d.get('removed', [])))}</p>"
        )
    gc, gr = ev.get("graph_candidate") or [], ev.get("graph_reference") or []
    if gc or gr:
        out.append(
            difflib.HtmlDiff(tabsize=4, wrapcolumn=70).make_table(
                [str(x) for x in gr],
                [str(x) for x in gc],
                fromdesc="reference (normalized core ATen graph)",
                todesc="task (normalized core ATen graph)",
                context=False,
            )
        )
    if ev.get("tried"):
        out.append(
            "<p>confirmations tried: "
            + esc(
                "; ".join(
                    f"{t.get('ref')}"
                    + (f" rebuilt at {t['rebuilt_at']}" if t.get("rebuilt_at") else "")
                    + f": semantic {t.get('semantic')}, equivalent={t.get('equivalent')}, "
                    f"max_abs_diff={t.get('max_abs_diff')}, {t.get('status')}"
                    for t in ev["tried"][:8]
                )
            )
            + "</p>"
        )
    out.append("</div>")
    return "".join(out)


def report_meta(
    contamination: pa.Table, reference: list[RefProblem], settings: DecontamSettings, reference_source: str = ""
) -> dict:
    rows = contamination.to_pylist()
    return {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "reference_source": reference_source,
        "reference_fingerprint": fingerprint(reference),
        "reference_problems": len(reference),
        "reference_levels": dict(sorted(Counter(f"level{p.level}" for p in reference).items())),
        "candidates": len(rows),
        "contaminated": sum(r["contaminated"] for r in rows),
        "decisions": dict(sorted(Counter(r["reason"] or "clean" for r in rows).items())),
        "method": sorted({r["method"] for r in rows}),
        "settings": settings.model_dump(mode="json"),
        "rule": "contaminated <=> md5 match | min(canon, ops) >= threshold | (ops >= ops_threshold & canon >= "
        "canon_floor) | (unparseable & raw >= raw_threshold) | outputs equal a semantically near problem's "
        "(functional_match) | the same whole graph as a problem's, over the same reduction axes, where the "
        "problem's model cannot take the task's inputs (semantic_structure) | near_variant (semantic >= "
        "near_variant_threshold, outputs differ, 1..."
        "near_variant_changes ops changed in place; an op swapped only with >= near_variant_min_kept ops "
        "kept) when near_variant_policy=remove",
        "near_variants": sum(bool(r.get("near_variant")) for r in rows),
        "views": dict(sorted(Counter(r.get("view") or "none" for r in rows if r["contaminated"]).items())),
    }


def write_report(
    contamination: pa.Table,
    candidates,
    reference: list[RefProblem],
    settings: DecontamSettings | None,
    out_dir: str | Path,
    reference_source: str = "",
    max_diffs: int = 300,
    max_rows: int = 20000,
) -> Path:
    """Write out_dir/report.html (and report_meta.json); returns the HTML path."""
    settings = settings or DecontamSettings()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = report_meta(contamination, reference, settings, reference_source)
    (out / "report_meta.json").write_text(json.dumps(meta, indent=1))
    codes = _codes(candidates)
    refs = {p.ref_id: p for p in reference}
    rows = contamination.to_pylist()
    flagged = sorted(
        (r for r in rows if r["contaminated"] or r.get("near_variant")), key=lambda r: (-r["score"], r["task_id"])
    )
    esc = html.escape
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>opforge decontamination report</title>"
        f"<style>{_CSS}</style></head><body>",
        "<h1>Decontamination report</h1>",
        "<h2>Reference</h2><table class='kv' id='reference'>",
        f"<tr><td>source</td><td>{esc(reference_source or '(given in code)')}</td></tr>",
        "<tr><td>fingerprint (sha256)</td><td><code id='fingerprint'>"
        f"{meta['reference_fingerprint']}</code></td></tr>",
        f"<tr><td>problems</td><td>{meta['reference_problems']} "
        f"({esc(', '.join(f'{k}: {v}' for k, v in meta['reference_levels'].items()))})</td></tr>",
        f"<tr><td>generated</td><td>{meta['generated_at']}</td></tr></table>",
        "<h2>Decision rule and thresholds</h2><table class='kv' id='thresholds'>",
        f"<tr><td>rule</td><td><code>{esc(meta['rule'])}</code></td></tr>",
        f"<tr><td>threshold</td><td>{settings.threshold}</td></tr>",
        f"<tr><td>ops_threshold / canon_floor</td><td>{settings.ops_threshold} / {settings.canon_floor}</td></tr>",
        f"<tr><td>raw_threshold</td><td>{settings.raw_threshold}</td></tr>",
        f"<tr><td>semantic</td><td>{'on' if settings.semantic else 'off'}; confirmation of the "
        f"{settings.semantic_top_k} nearest problems (semantic &ge; {settings.semantic_threshold}) and those "
        f"with the same input shapes (semantic &ge; {settings.same_inputs_floor}), and up to "
        f"{settings.same_shapes_max} with the same input and output shapes whatever their similarity, "
        f"{settings.same_ranks_max} with the same ranks and parameter sizes, {settings.probe_max} weightless ones "
        f"with the same outputs on the probe's inputs, {settings.rebuilt_max} rebuilt at the task's constructor "
        "arguments; outputs "
        "equal within atol "
        f"{settings.confirm_atol} + rtol "
        f"{settings.confirm_rtol} &times; scale</td></tr>",
        f"<tr><td>semantic_structure</td><td>semantic &ge; {settings.structure_threshold} (the same whole "
        "graph, sizes aside) of a problem of at least {settings.structure_min_ops} primitive ops, the same "
        "reduction axes, the problem's model unable to take the task's inputs (over other axes: "
        "near_variant)</td></tr>",
        f"<tr><td>near_variant</td><td>semantic &ge; {settings.near_variant_threshold}, 1 to "
        f"{settings.near_variant_changes} ops changed in place (an op swapped: &ge; "
        f"{settings.near_variant_min_kept} kept); policy <b id='near-policy'>"
        f"{esc(settings.near_variant_policy)}</b></td></tr>",
        f"<tr><td>MinHash</td><td>num_perm={settings.num_perm}, seed={settings.seed}, scheme={settings.scheme}, "
        f"LSH thresholds canon/raw={settings.lsh_threshold}, ops={settings.lsh_threshold_ops}</td></tr>",
        f"<tr><td>shingles</td><td>canonical {settings.canon_shingle} tokens, "
        f"ops n-grams 1..{settings.ops_ngram}, "
        f"raw {settings.raw_shingle} characters</td></tr>",
        f"<tr><td>scoring</td><td>{esc(', '.join(meta['method']))}</td></tr></table>",
        "<h2>Counts per decision</h2><table class='kv' id='counts'>",
        f"<tr><td>candidates</td><td>{meta['candidates']}</td></tr>",
        f"<tr><td>contaminated</td><td>{meta['contaminated']}</td></tr>",
    ]
    parts += [f"<tr><td>{esc(k)}</td><td>{v}</td></tr>" for k, v in meta["decisions"].items()]
    parts += [f"<tr><td>view fired: {esc(k)}</td><td>{v}</td></tr>" for k, v in meta["views"].items()]
    parts.append("</table>")
    more = f" Showing the first {max_rows} rows; all are in contamination.parquet." if len(rows) > max_rows else ""
    parts.append(f"<h2>All candidates</h2><p>Click a column header to sort.{more}</p>")
    parts.append(
        "<table class='sortable' id='candidates'><thead><tr>"
        + "".join(f"<th>{c}</th>" for c in _COLUMNS)
        + "</tr></thead><tbody>"
    )
    with_diff = {r["task_id"] for r in flagged[:max_diffs]}
    for r in rows[:max_rows]:
        cls = " class='flag'" if r["contaminated"] else ""
        cells = []
        for c in _COLUMNS:
            if c == "task_id" and r["task_id"] in with_diff:
                cells.append(f"<td><a href='#diff-{esc(r['task_id'])}'>{esc(r['task_id'])}</a></td>")
            else:
                cells.append(_cell(r[c]))
        parts.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    parts.append(f"<h2>Flagged tasks ({len(flagged)})</h2>")
    if len(flagged) > max_diffs:
        parts.append(f"<p>Diffs for the {max_diffs} highest-scoring; the rest are listed in the table above.</p>")
    differ = difflib.HtmlDiff(tabsize=4, wrapcolumn=90)
    for r in flagged[:max_diffs]:
        ref = refs.get(r["nearest_ref"])
        cand = codes.get(r["task_id"])
        scores = ", ".join(
            f"{k}={r[k]:.3f}" for k in ("score", "nearest_canon", "nearest_ops", "nearest_raw", "ast_similarity")
        )
        parts.append(
            f"<details class='flagged' id='diff-{esc(r['task_id'])}' open>"
            f"<summary>{esc(r['task_id'])} &rarr; "
            f"{esc(r['nearest_ref'])} ({esc(r['reason'])})</summary>"
        )
        parts.append(
            f"<p class='scores'>view fired: <b class='view'>{esc(r.get('view') or '')}</b>; "
            f"{esc(scores)}, md5_match={r['md5_match']}, semantic={r.get('semantic_score', 0.0):.3f}"
            f"{' (kept: near_variant_policy=keep)' if not r['contaminated'] else ''}</p>"
        )
        parts.append(_evidence_html(r.get("evidence") or ""))
        if ref is not None and cand is not None:
            parts.append(
                differ.make_table(
                    ref.code.splitlines(),
                    cand.splitlines(),
                    fromdesc=esc(ref.ref_id),
                    todesc=esc(r["task_id"]),
                    context=False,
                )
            )
        else:
            parts.append("<p>(code not available for the diff)</p>")
        parts.append("</details>")
    parts.append(f"<script>{_JS}</script></body></html>")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
