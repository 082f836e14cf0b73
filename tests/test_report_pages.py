"""What a reviewer reads: every rendered report answers first and reads clean (no code, no log or
warning line, no machine path, no scientific notation or truncated table), carries the machine
card of the measuring run, and the tables helper that gets it there."""
import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from storebench.paths import REPORTS_DIR, ROOT
from storebench.report import machine
from storebench.report.tables import ReportTables, header, readable_frame, readable_text, size

NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
SECTIONS = ["<b>Question</b>", "<b>Answer</b>", "<b>Measured</b>", "<img ", ">Findings<", ">Method<",
            ">Detailed results<", ">Provenance<"]  # in this order


def main_part(page: str) -> str:
    """The page's body, its images' data left out."""
    return re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "data:image", page[page.index("<main>"):])


def table_cells(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", main_part(page), re.S)]


def check_page(page: str, name: str) -> None:
    body = main_part(page)
    h1 = re.findall(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    assert len(h1) == 1
    assert f"<title>{re.sub(r'<[^>]+>', '', h1[0]).replace('¶', '').strip()}</title>" in page
    assert body.index('href="index.html"') < body.index("<h1")  # the way back, above the title
    assert "jp-CodeMirrorEditor" not in body and "report.publish(" not in body  # no code
    positions = [body.index(marker) for marker in SECTIONS]
    assert positions == sorted(positions), "answer, figures, findings, method, details, provenance"
    assert all(re.search(r' width="\d+"', tag) for tag in re.findall(r"<img [^>]*>", body))  # its own size
    for text in ("WARN", "Warning", "/work/", "/tmp/", "/root/", "Traceback"):
        assert text not in body, text
    cells = table_cells(page)
    assert cells and not [c for c in cells if re.search(r"\d\.?\d*e[+-]\d", c)]  # no scientific notation
    assert not [c for c in cells if "..." in c or c.strip() in ("NaN", "nan")]  # nothing cut, nothing "NaN"
    assert "<caption>machine and run</caption>" in body and ">CPU<" in body and ">kernel<" in body
    assert "<details><summary>settings of this run" in body  # the settings dump folded away
    for link in re.findall(r"href='(tables/[^']+\.csv)'", body):  # long tables: whole, beside the report
        assert (REPORTS_DIR / link).exists() or name == "rendered", link


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_committed_report_answers_first_and_reads_clean(name):
    check_page((REPORTS_DIR / f"{name}.html").read_text(encoding="utf-8"), name)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_has_one_parameters_cell_and_keeps_its_code(name):
    node = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert sum("parameters" in c.metadata.get("tags", []) for c in node.cells) == 1
    assert sum(c.source.startswith("# ") for c in node.cells if c.cell_type == "markdown") == 1  # one title


def test_a_report_rendered_now_from_the_committed_results_reads_clean(tmp_path):
    from storebench.pipeline import notebooks

    page = notebooks.run("granularity", out_dir=tmp_path, progress=False).read_text(encoding="utf-8")
    check_page(page, "rendered")
    for link in re.findall(r"href='(tables/[^']+\.csv)'", page):
        assert len(pd.read_csv(tmp_path / link))


def test_headers_carry_units_and_numbers_read_plainly():
    assert [header(c) for c in ("loader_rows_per_second", "t_median_s", "images_per_s", "seed_mb_per_s", "ci95",
                                "disk_usage_bytes", "loader_us_per_row", "cpu_pct", "Seed (MB/s)")] == \
        ["loader rows/s", "t median (s)", "images/s", "seed MB/s", "± 95% CI", "disk usage", "loader (µs/row)",
         "cpu (%)", "Seed (MB/s)"]
    assert [size(v) for v in (512, 40_960_000, 1_282_048, 25_276_510_208)] == ["512 B", "41 MB", "1.28 MB", "25.3 GB"]
    assert readable_text("0.00823 ± 2e-05, 1.22e+03x") == "0.00823 ± 0.00002, 1,220x"


def test_a_table_shows_counts_as_integers_sizes_in_units_and_hides_the_constant_machine_columns():
    frame = pd.DataFrame({"system": ["redis", "minio"], "requests": [1.0, 16.0], "mean_s": [0.000123456, 2810.149],
                          "object_bytes": [2048, 3.5e9], "prefetch": [float("nan"), 4.0], "host": ["vm", "vm"]})
    shown = readable_frame(frame)
    assert list(shown.columns) == ["system", "requests", "mean (s)", "object", "prefetch"]
    assert shown.values.tolist() == [["redis", "1", "0.000123", "2.05 kB", "–"], ["minio", "16", "2,810", "3.5 GB", "4"]]


def test_a_long_table_shows_its_head_and_is_written_whole_as_csv(tmp_path):
    shown = ReportTables("exp", tmp_path)
    page = shown.html(pd.DataFrame({"k": range(40), "seconds": [i / 3 for i in range(40)]}), "reads by key")
    assert "<caption>reads by key</caption>" in page and "as CSV: <a href='tables/exp/reads-by-key.csv'>" in page
    assert "<details><summary>all 40 rows</summary>" in page and "..." not in page
    assert len(pd.read_csv(tmp_path / "tables" / "exp" / "reads-by-key.csv")) == 40
    assert "tables/" not in shown.html(pd.DataFrame({"k": range(3)}))  # a short one is just shown


def test_the_machine_card_comes_from_the_manifest_and_says_what_an_older_one_lacks():
    manifest = json.loads((ROOT / "results" / "granularity" / "manifest.json").read_text())
    card = dict(machine.card(manifest))
    assert card["cores"] == str(manifest["machine"]["cores"]) and card["run id"] == manifest["run_id"]
    old = {"run_id": "x-1", "machine": {"cores": 2}}
    assert dict(machine.card(old))["CPU"] == "not recorded" and dict(machine.card(old))["kernel"] == "not recorded"
    assert "not recorded" in machine.card_html(old) and "2 cores" in machine.summary(old)


def test_the_measured_line_gives_the_rows_a_run_read_not_the_presets_sample_count():
    from storebench.report import notebook

    resources = {"n_samples": 60000, "rows": {"text": 100000, "graph": 272115}, "factors": {"text": 27}}
    data = notebook.measured({"scale": "reference", "settings": resources})
    assert "rows: text 2,700,000 (100,000 x27), graph 272,115" in data and "60,000" not in data
    assert "60,000 samples" in notebook.measured({"settings": {"n_samples": 60000}})
    assert "data size not recorded" in notebook.measured({"settings": resources}, "{images:,} images per encoding")
    assert "rows: text 100,000," in notebook.measured({"settings": {**resources, "factors": {}}})


def test_a_run_whose_parts_ran_on_two_machines_names_both_and_which_parts_ran_where_in_a_parts_table(tmp_path):
    from storebench.core.experiment import ResultTables
    from storebench.report import index, notebook

    common = {"host": "vm", "cores": 2, "memory_bytes": 25 * 2**30, "disk_device": "/dev/vda", "filesystem": "ext4"}
    cpus = {"image": ("AMD EPYC", "family 26 model 2"), "text": ("Intel Xeon", "family 6 model 167"),
            "graph": ("AMD EPYC", "family 26 model 2")}
    for part, (cpu, cpu_id) in cpus.items():
        (tmp_path / part).mkdir()
        pd.DataFrame({"system": [part], "seconds": [1.0]}).to_csv(tmp_path / part / "t.csv", index=False)
        (tmp_path / part / "manifest.json").write_text(json.dumps({
            "run_id": part, "started_utc": "2026-11-26T21:12", "duration_s": 10, "scale": "reference",
            "machine": {**common, "cpu_model": cpu, "cpu_id": cpu_id}}))
    run = ResultTables.read(tmp_path).manifest
    assert run["machine"]["cpu_model"] == ["AMD EPYC", "Intel Xeon"] and run["machine"]["cores"] == 2
    assert "2 cores (AMD EPYC / Intel Xeon)" in machine.summary(run)
    assert dict(machine.card(run))["parts by machine"] == (
        "AMD EPYC (family 26 model 2): graph, image; Intel Xeon (family 6 model 167): text")
    assert "ran on 2 machines" in machine.mixed_note(run) and "Machines</b>" in notebook._mixed_machines(run)
    page = index.runs_summary([index.Recorded("x", "harness", "", (), (), run)])
    assert "vm: AMD EPYC, 2 cores" in page and "vm: Intel Xeon, 2 cores" in page
    assert index.revisions_text([{"git_rev": "a1, b2"}, {"git_rev": "b2"}]) == "git a1, b2"
    assert index.revisions_text([{"git_rev": "a1, b2, c3"}, {"git_rev": "d4"}]).startswith("4 git revisions, one a part")
    assert [(row["part"], row["CPU"]) for row in machine.parts(run)] == [
        ("graph", "AMD EPYC"), ("image", "AMD EPYC"), ("text", "Intel Xeon")]
    assert dict(machine.card(run))["run id"] == "3 runs, one a part: see the parts table"
    assert "3 runs, one a part: see Provenance" in notebook.measured(run)
    one = ResultTables.read(tmp_path / "text").manifest
    assert machine.parts(one) == [] and "run text" in notebook.measured(one)
    assert machine.mixed_note(one) == "" and "parts by machine" not in dict(machine.card(one))
    assert len(machine.machines(run)) == 2 and machine.machines(one) == [(one["machine"], [])]


def test_a_note_several_parts_wrote_is_shown_once_naming_its_parts():
    from storebench.core.experiment import ResultTables
    from storebench.report import notebook

    notes = pd.DataFrame({"note": ["on tmpfs", "on tmpfs", "redis in memory"], "part": ["image", "graph", "servers"]})
    shown = notebook.skipped(ResultTables({"notes": notes}, {}))
    assert shown.reason.tolist() == ["on tmpfs", "redis in memory"] and shown.part.tolist() == ["image, graph", "servers"]


def test_a_reference_report_states_what_its_measured_parts_leave_out_of_the_grid(tmp_path):
    from storebench.core.experiment import ResultTables
    from storebench.report import notebook

    stated = tmp_path / "left_out.yaml"
    stated.write_text("training:\n"
                      "  tiledb-w2: [{system: tiledb, what: per-sample at W 2, reason: segfaulted}]\n"
                      "  tiledb-w0: [{system: tiledb, what: batch 16, reason: slow}]\n"
                      "location:\n  cifar: [{system: redis, what: x, reason: y}]\n")
    skipped = pd.DataFrame({"system": ["ceph"], "location": ["disk-warm"], "what": ["training"], "reason": ["down"]})
    reference = {"experiment": "training", "scale": "reference", "parts": {"tiledb-w2": {}, "rocksdb": {}}}
    shown = notebook.skipped(ResultTables({"skipped": skipped}, reference), stated)
    assert shown[["system", "what", "reason", "part"]].values.tolist() == [
        ["ceph", "training", "down", ""], ["tiledb", "per-sample at W 2", "segfaulted", "tiledb-w2"]]
    quick_check = {**reference, "scale": "small"}
    assert len(notebook.skipped(ResultTables({"skipped": skipped}, quick_check), stated)) == 1


def test_every_part_the_left_out_file_names_is_a_reference_part_of_its_experiment():
    from storebench.pipeline import yamlfile
    from storebench.report.notebook import LEFT_OUT

    parts = yamlfile.load(ROOT / "params.yaml")["parts"]
    for experiment, stated in yamlfile.load(LEFT_OUT).items():
        assert set(stated) <= set(parts[experiment]), experiment
        assert all(set(row) == {"system", "what", "reason"} for rows in stated.values() for row in rows)


def test_a_go_install_minio_is_named_by_its_commit():
    versions = machine.versions({"versions": {"system_versions": {
        "minio": "MinIO DEVELOPMENT.GOGET (github.com/minio/minio v0.0.0-20260212201848-7aac2a2c5b7c)"}}})
    assert versions == [("server: minio", "MinIO commit 7aac2a2c5b7c of 2026-02-12 (github.com/minio/minio)")]


def _access_pattern_in_two_parts(tmp_path: Path, machines: tuple[str, str]):
    """The committed access_pattern tables split in two parts, Redis's sequential pass alone in the first,
    the parts' manifests naming the CPUs ``machines``."""
    from storebench.core.experiment import ResultTables

    whole = ROOT / "results" / "access_pattern"
    rows = pd.read_csv(whole / "access_pattern.csv")
    manifest = json.loads((whole / "manifest.json").read_text())
    alone = (rows.system == "redis") & (rows.access == "sequential")
    for (part, keep), cpu in zip((("a-redis-sequential", alone), ("b-the-rest", ~alone)), machines):
        (tmp_path / part).mkdir()
        rows[keep].to_csv(tmp_path / part / "access_pattern.csv", index=False)
        for name in ("systems", "skipped", "notes", "clients_redis", "harness"):
            (tmp_path / part / f"{name}.csv").write_bytes((whole / f"{name}.csv").read_bytes())
        (tmp_path / part / "manifest.json").write_text(json.dumps(
            {**manifest, "run_id": part, "machine": {**manifest["machine"], "cpu_model": cpu}}))
    return ResultTables.read(tmp_path)


def test_a_claim_that_sets_one_machines_figures_against_anothers_is_not_comparable(tmp_path):
    from storebench.experiments.dl_storage_benchmarking.access_pattern import analysis

    tables = _access_pattern_in_two_parts(tmp_path, ("AMD EPYC", "Intel Xeon"))
    plain, judged = analysis.analyse(tables).claims, machine.judged_within_machines(analysis.analyse, tables)
    assert len(judged.claims) == len(plain)
    changed = [(before, after) for before, after in zip(plain, judged.claims) if before != after]
    # Redis random k=1 / sequential needs both parts; every other claim one part (the same figure from it alone)
    assert [after.metric for _, after in changed] == [c.metric for c in plain
                                                      if c.metric.startswith("redis") and "sequential" in c.metric]
    for before, after in changed:
        assert after.verdict == "not comparable" and after.why.startswith("crosses machines")
        assert "a-redis-sequential" in after.why and "Intel Xeon" in after.why and not after.cause
        assert (after.value, after.ci_low, after.ci_high) == (before.value, before.ci_low, before.ci_high)
    assert "**1 of the 12 claims cross machines**" in judged.markdown


def test_parts_on_one_machine_are_judged_as_a_whole(tmp_path):
    from storebench.experiments.dl_storage_benchmarking.access_pattern import analysis

    tables = _access_pattern_in_two_parts(tmp_path, ("AMD EPYC", "AMD EPYC"))
    assert machine.judged_within_machines(analysis.analyse, tables) == analysis.analyse(tables)


def test_the_breakdown_figure_draws_a_bar_group_per_server_and_location_tagged_with_its_machine():
    """The reference breakdown (a server at two locations, its parts on two machines) draws: each bar group
    is a server at one location, and names the machine its parts ran on; one machine's run names none."""
    import matplotlib.pyplot as plt

    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.breakdown import analysis

    tables = ResultTables.read(ROOT / "results" / "reference" / "breakdown")
    tags, note = machine.part_tags(tables.manifest)
    assert tags["minio-cold-lan"] != tags["minio-warm-lan"] and note.startswith("Machines: M1 = ")
    names = analysis.bar_labels(tables["breakdown"], tags)
    assert names[("minio", "disk-warm")] == f"minio\ndisk-warm\n({tags['minio-warm-lan']})"
    assert names[("minio", "disk-cold-pagecache")].endswith(f"({tags['minio-cold-lan']})")
    figure = analysis.figures(tables)["breakdown"]
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert sorted(labels) == sorted(name for (system, _), name in names.items() if system != "localfs")
    plt.close(figure)
    assert machine.part_tags(ResultTables.read(ROOT / "results" / "breakdown").manifest) == ({}, "")


def test_a_shuffle_cost_whose_two_shuffles_ran_on_different_machines_is_marked_as_crossing():
    """granularity's reference parts ran on two machines: a per-sample / whole-object ratio whose two shuffles
    come from parts on different machines is drawn hollow and named apart in the text; one from parts on one
    machine (MinIO's two parts, and one machine's run) is not."""
    import matplotlib.pyplot as plt

    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.granularity import analysis

    tables = ResultTables.read(ROOT / "results" / "reference" / "granularity")
    tags, _ = machine.part_tags(tables.manifest)
    cost = analysis.shuffle_cost(analysis.summary(tables["granularity"]), tags)
    crossing = cost.groupby("system").crosses_machines.agg(set)
    assert crossing["minio"] == {False} and crossing["localfs"] == {False} and crossing["cassandra"] == {True}
    assert not analysis.shuffle_cost(analysis.summary(tables["granularity"])).crosses_machines.any()
    text = analysis.analyse(tables).markdown
    assert "The ratios of cassandra, ceph, tensorstore-zarr set a part on one machine against" in text
    figure = analysis.figures(tables)["shuffle_cost"]
    hollow = [line for ax in figure.axes for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert len(hollow) == len(cost[cost.crosses_machines].groupby(["system", "samples_per_request"]))
    assert "Hollow markers (cassandra, ceph, tensorstore-zarr)" in " ".join(t.get_text() for t in figure.texts)
    plt.close(figure)


def test_the_granularity_figure_draws_a_panel_per_measured_system_and_dataset_one_colour_per_request_size():
    """granularity's reference run has CIFAR-10 on MinIO only: no empty panels for the other systems, and
    a request size has one colour in every panel (MinIO's CIFAR-10 grid lacks 4 and 64 per request)."""
    import matplotlib.pyplot as plt

    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.granularity import analysis

    tables = ResultTables.read(ROOT / "results" / "reference" / "granularity")
    shown = tables["granularity"][tables["granularity"].access == "random-objects"]
    figure = analysis.figures(tables)["download_time"]
    panels = {ax.get_title(): ax for ax in figure.axes if ax.axison}
    assert len(panels) == len(shown.groupby(["system", "dataset"]))
    colour = {(title, label): handle.lines[0].get_color() for title, ax in panels.items()
              for handle, label in zip(*ax.get_legend_handles_labels())}
    for k in ("1/request", "16/request", "256/request"):
        assert colour[("minio (cifar10)", k)] == colour[("cassandra (mnist)", k)]
    plt.close(figure)


def test_a_share_claim_reads_as_a_percentage_in_the_claims_table():
    """A share is held as a fraction (0.068) and read as a percentage (6.8%), its CI too."""
    from storebench.report import notebook
    from storebench.report.findings import Findings, above, judge

    share = judge("Sec 5.1", "Processing takes most of the time.", "processing share", 0.0682, (0.0541, 0.0834),
                  above(0.05), unit="%")
    ratio = judge("Sec 5.1", "A is faster.", "B / A", 2.5, (2.0, 3.0), above(1.0))
    table = notebook.claims_table(Findings("headline", "", claims=(share, ratio)))
    assert "6.82 [5.41, 8.34]%" in table and "2.5 [2, 3]x" in table and "0.0682" not in table


def test_a_field_the_parts_differ_in_only_below_its_shown_precision_reads_once():
    run = {"machine": {"cores": 2, "cpu_model": "Intel Xeon", "memory_bytes": [25276071936, 25276194816]}}
    assert "Intel Xeon), 25.3 GB memory" in machine.summary(run) and " / " not in machine.summary(run)


def test_two_instances_of_one_machine_type_are_named_apart_by_the_field_they_differ_in():
    found = [({"cpu_model": "AMD EPYC", "cpu_id": "family 25 model 17", "kernel": k, "memory_bytes": m}, [part])
             for k, m, part in [("6.18-v1147", 25276071936, "a"), ("6.18-v1272", 25276194816, "b")]]
    found.append(({"cpu_model": "Intel Xeon", "cpu_id": "family 6", "kernel": "6.18-v669"}, ["c"]))
    assert machine._labels(found) == ["AMD EPYC (family 25 model 17), kernel 6.18-v1147",
                                      "AMD EPYC (family 25 model 17), kernel 6.18-v1272", "Intel Xeon (family 6)"]


def test_a_report_on_some_parts_of_its_measurement_names_the_parts_it_misses(tmp_path):
    import yaml

    from storebench.report import notebook

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"parts": {"granularity": {"a": {}, "b": {}, "c": {}}}}))
    banner = notebook.partial_banner("granularity", {"parts": {"a": {}}}, params)
    assert "<b>Partial report</b>: 1 of 3 parts" in banner and "not measured yet: b, c." in banner
    assert notebook.partial_banner("granularity", {"parts": {"a": {}, "b": {}, "c": {}}}, params) == ""
    assert notebook.partial_banner("granularity", {"run_id": "r1"}, params) == ""  # measured in one piece


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPORTS_DIR / "reference" / "partial").glob("*.html")))
def test_a_committed_partial_report_says_it_is_partial_above_its_answer(name):
    page = (REPORTS_DIR / "reference" / "partial" / f"{name}.html").read_text(encoding="utf-8")
    body = main_part(page)
    assert body.index('href="../../index.html"') < body.index("<b>Partial report</b>") < body.index("<b>Answer</b>")
    for text in ("Traceback", "/work/", "/tmp/"):
        assert text not in body, text


def test_the_layouts_answer_line_says_only_what_was_measured_with_the_claims_means():
    """A run without L3 (layouts' first reference part) has no "L3 reads n/a the minimum"; its L1/L2 ratios are
    the claims' (means, not the detail table's medians)."""
    from storebench.core.experiment import ResultTables
    from storebench.experiments.layoutbench.layouts import analysis

    tables = ResultTables.read(ROOT / "results" / "reference" / "layouts" / "t3-others")  # L1, L2, L4
    made = analysis.analyse(tables)
    claims = {c.statement: c.value for c in made.claims}
    assert "n/a" not in made.headline and "L3" not in made.headline
    small = claims["Small retrievals: L1 and L2 take about the same time."]
    large = claims["Large retrievals: L2 (tar shards) is faster than L1."]
    assert f"small L1/L2 {analysis.sig3(small)}x, large L1/L2 {analysis.sig3(large)}x" in made.headline


def test_the_layouts_figure_draws_no_empty_panel_for_a_run_without_memory_tiers_or_a_second_link():
    """layouts' first reference parts measure one link and no memory tier: the figure had an empty panel beside
    each of its two (time per query, bytes over the minimum)."""
    import matplotlib.pyplot as plt

    from storebench.core.experiment import ResultTables
    from storebench.experiments.layoutbench.layouts import analysis

    figure = analysis.figures(ResultTables.read(ROOT / "results" / "reference" / "layouts" / "t3-others"))["layouts"]
    shown = [ax for ax in figure.axes if ax.axison]
    assert [ax.get_title().split(",")[0] for ax in shown] == ["time per query", "bytes received / minimum needed"]
    assert all(ax.patches for ax in shown)
    plt.close(figure)


def _layouts_line(prefix: str, other_build: set[str]) -> str:
    """The committed layouts reference parts re-analysed as if all ran on one machine but ``other_build``'s parts
    (another kernel build): the markdown line starting with ``prefix``."""
    import copy

    from storebench.core.experiment import ResultTables
    from storebench.experiments.layoutbench.layouts import analysis
    from storebench.report.notebook import load

    tables = load("layouts", str(ROOT / "results" / "reference"))
    manifest = copy.deepcopy(tables.manifest)
    one = manifest["parts"]["t3-others"]["machine"]
    for part, run in manifest["parts"].items():
        run["machine"] = {**one, "kernel": "another build" if part in other_build else one["kernel"]}
    made = analysis.analyse(ResultTables({n: tables[n] for n in tables.names}, manifest))
    return next(line for line in made.markdown.splitlines() if line.startswith(prefix))


def test_the_layouts_past_the_seed_ratio_says_when_it_sets_one_machine_against_another():
    """L3 sorted by label was measured in its own part: T(L3s) / best(L1, L2) is a ratio across machines when
    that part ran on another machine than L1's and L2's, and the line must say so (and not of L4, measured
    with L1 and L2)."""
    apart = _layouts_line("Past the seed", {"t3-l3-sorted"})
    assert "L3 sorted by label small" in apart and "(crosses machines: L3s on M" in apart
    assert apart.count("crosses machines") == 1 and "Machines: M1 = " in apart
    together = _layouts_line("Past the seed", set())
    assert "crosses machines" not in together and "Machines:" not in together


def test_the_layouts_bandwidth_ratio_says_when_its_two_links_ran_on_different_machines():
    """T(slow link) / T(fast link): the fast link's part (c5-c8gb-others) on another machine than the slow
    link's makes Finding 3's ratios cross machines, and the line says so; the past-the-seed ratios, all at the
    slow link, do not cross (they look only at the rows they divide)."""
    bandwidth = _layouts_line("T at ", {"c5-c8gb-others"})
    assert "crosses machines: s3-5g on M" in bandwidth and "s3-20g on M" in bandwidth
    assert "Machines: M1 = " in bandwidth
    assert "crosses machines" not in _layouts_line("Past the seed", {"c5-c8gb-others"})
    assert "crosses machines" not in _layouts_line("T at ", set())
