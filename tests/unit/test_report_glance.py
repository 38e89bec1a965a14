"""The report's first page, read from provenance records."""

from __future__ import annotations

import json

from paramill.io.outputs import atomic_output
from paramill.io.jsonfiles import write_json
from paramill.provenance import Run, prov_path
from paramill.report.glance import glance, glance_html


def _step(rule, inputs, output, write, rows):
    run = Run(rule=rule, params={}, inputs=inputs)
    with atomic_output(output, prov_path(output)) as (tmp, tmp_prov):
        write(tmp)
        run.write({output: tmp}, {output: tmp_prov}, rows_in=None, rows_out=rows)


def test_glance_says_what_ran_on_what_and_what_came_out(tmp_path):
    raw = tmp_path / "data" / "raw.tsv"
    raw.parent.mkdir()
    raw.write_text("a\tb\nc\td\n")
    work, results = tmp_path / "work", tmp_path / "results"
    shard = work / "shard.tsv"
    _step("ingest", [raw], shard, lambda t: t.write_text(raw.read_text()), 2)
    sel = results / "corpus" / "default" / "selection.json"
    _step("select", [shard], sel, lambda t: write_json(t, {"rows": 1234}), 1234)
    sts = results / "embed" / "word" / "sts.json"
    _step("sts_eval", [shard], sts, lambda t: write_json(t, {"datasets": [
        {"dataset": "stsb-dev", "pearson": 77.7}], "years": []}), None)
    got = glance([shard, sel, sts], results)
    assert got["jobs"] == 3 and set(got["rules"]) == {"ingest", "select", "sts_eval"}
    assert [e["path"] for e in got["inputs"]] == [str(raw)]  # the shard was produced here
    out = {o["output"]: o for o in got["outputs"]}
    assert set(out) == {str(sel), str(sts)}  # only what is under results/
    assert out[str(sel)]["figures"] == "1,234 pairs released" and out[str(sel)]["rows"] == 1234
    assert out[str(sts)]["figures"] == "STS Pearson ×100: stsb-dev 77.7"
    page = glance_html(got)
    assert "What came out" in page and "1,234 pairs released" in page and str(raw) in page
    assert json.loads(json.dumps(got)) == got  # plain data


def test_the_selection_headline_names_what_each_step_dropped(tmp_path):
    sel = tmp_path / "results" / "corpus" / "default" / "selection.json"
    steps = [("candidates", 1000), ("identical", 900), ("langid_cand in [0.2, inf]", 880),
             ("duplicates", 880), ("near_duplicates", 850)]
    _step("select", [], sel, lambda t: write_json(t, {"rows": 850, "steps": [
        {"step": k, "pairs": v} for k, v in steps]}), 850)
    (out,) = glance([sel], tmp_path / "results")["outputs"]
    assert out["figures"] == ("850 pairs released; dropped by identical 100, "
                              "langid_cand in [0.2, inf] 20, near_duplicates 30")


def test_pages_render_tables_json_and_datasheets(tmp_path, monkeypatch):
    from paramill.report import pages

    monkeypatch.setattr(pages, "MAX_ROWS", 3)
    tsv = tmp_path / "r" / "t.tsv"
    tsv.parent.mkdir()
    tsv.write_text("a\tb\n" + "".join(f"{i}\t<x{i}>\n" for i in range(5)))
    md = tmp_path / "r" / "datasheet.md"
    md.write_text("# Sheet\n\n| k | v |\n| --- | --- |\n| rows | 7 |\n")
    js = tmp_path / "r" / "selection.json"
    js.write_text(json.dumps({"rows": 7}))
    other = tmp_path / "r" / "x.png"
    other.write_bytes(b"\x89PNG")
    out = tmp_path / "pages.html"
    done = pages.render([tsv, md, js, other, tmp_path / "missing.tsv"], out)
    assert done == sorted(map(str, (tsv, md, js)))
    page = out.read_text()
    table = page[page.index(f"id='{pages.anchor(tsv)}'"):]
    assert "The first 3 of 5 rows" in table and "&lt;x2&gt;" in table and "x3" not in table
    assert "<h1>Sheet</h1>" in page and "<td>rows</td>" in page
    assert "7 pairs released" in page and page.count("<li>") == 3


def test_a_result_page_that_cannot_be_read_names_the_file(tmp_path):
    """A .tsv that is not UTF-8 or has a row of more fields, a .md that is not UTF-8, a .json
    that is not JSON: each ended in a polars traceback or an error naming no file."""
    import pytest

    from paramill.errors import InputError
    from paramill.report import pages

    cases = {"bad.tsv": (b"a\tb\n\xff\xfe\tx\n", "cannot be shown in the report: invalid utf-8"),
             "ragged.tsv": (b"a\tb\n1\t2\t3\n", "cannot be shown in the report: found more fields"),
             "bad.md": (b"# t\n\xff\n", "cannot be shown in the report: 'utf-8' codec can't decode"),
             "cut.json": (b'{"rows":\n', "not JSON")}
    for name, (data, says) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as caught:
            pages.render([path], tmp_path / "pages.html")
        assert caught.value.path == str(path) and says in str(caught.value)
        assert "Consider setting" not in str(caught.value)  # polars' advice is not ours to give
        path.unlink()
    assert not (tmp_path / "pages.html").exists()


def test_a_result_without_its_figures_never_stops_the_summary(tmp_path):
    from paramill.report.glance import _headline

    simlex = tmp_path / "simlex.json"
    simlex.write_text(json.dumps({"results": [{"score": "pmi", "spearman": None}]}))
    assert _headline(simlex) == "SimLex-999: no pair of the lexicon's words to score"
    paraid = tmp_path / "paraid.json"  # every model of the report, the cross-encoder's too
    paraid.write_text(json.dumps({"evaluations": [{"data": "cv", **{m: {"f1": f} for m, f in (
        ("lr", 0.7), ("extended", 0.72), ("cross", 0.8))}}], "threshold": {
        "used": 0.4, "model": "cross", "precision": 0.8}}))
    assert _headline(paraid) == ("identifier max F1 (cv): lr 0.7, extended 0.72, cross 0.8; "
                                 "accepts at p ≥ 0.4 (cross, precision 0.8 on held-out folds)")
    broken = tmp_path / "paraid.json"
    broken.write_text(json.dumps({"evaluations": []}))
    assert _headline(broken) is None
    (tmp_path / "sts.json").write_text("not json")
    assert _headline(tmp_path / "sts.json") is None
