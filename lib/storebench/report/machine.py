"""The machine card of a report: what the recorded results were measured on, from the manifest
written with them (never from the machine that renders the report). A field an older manifest
lacks reads "not recorded"."""
from __future__ import annotations

import html
import math
from dataclasses import asdict, replace
from typing import Callable

from storebench.core.experiment import ResultTables
from storebench.core.provenance import build_identifier
from storebench.report.findings import NOT_COMPARABLE, Claim, Findings
from storebench.report.tables import size

NOT_RECORDED = "not recorded"
MACHINE_FIELDS = [  # (manifest "machine" key, label)
    ("cpu_model", "CPU"), ("cpu_id", "CPU family/model"), ("cpu_mhz", "CPU clock (MHz)"), ("cores", "cores"),
    ("hypervisor", "hypervisor"), ("memory_bytes", "memory"), ("disk_device", "disk (data/work dir)"),
    ("disk_size_bytes", "disk size"), ("disk_rotational", "rotational disk"), ("filesystem", "filesystem"),
    ("kernel", "kernel"), ("os", "OS"), ("python", "Python"), ("host", "host")]
RUN_FIELDS = [("started_utc", "started (UTC)"), ("finished_utc", "finished (UTC)"), ("duration_s", "duration (s)"),
              ("run_id", "run id"), ("git_rev", "git revision"), ("scale", "scale"), ("params_hash", "params hash")]


IDENTITY_FIELDS = ("host", "cpu_model", "cpu_id", "cores", "memory_bytes", "disk_device", "filesystem", "kernel", "os")


def machines(manifest: dict) -> list[tuple[dict, list[str]]]:
    """The machines a run was measured on, each with the parts it measured, in the parts' order: one
    machine (and no parts listed) for a run that was not split or whose parts all ran on one machine.
    Parts measured in different sessions may have run on different hosts."""
    groups: dict[tuple, tuple[dict, list[str]]] = {}
    for part, run in (manifest.get("parts") or {}).items():
        if run.get("machine"):
            identity = tuple(str(run["machine"].get(key)) for key in IDENTITY_FIELDS)
            groups.setdefault(identity, (run["machine"], []))[1].append(part)
    if len(groups) > 1:
        return list(groups.values())
    return [(manifest.get("machine") or {}, [])]


def part_tags(manifest: dict) -> tuple[dict[str, str], str]:
    """For a run whose parts ran on more than one machine: each part's machine as a short tag ("M1", "M2",
    in the order of ``machines``) for a figure's labels, and a footnote naming each tag's CPU; ({}, "") for
    a run on one machine."""
    found = machines(manifest)
    if len(found) < 2:
        return {}, ""
    tags = {part: f"M{i}" for i, (_, parts) in enumerate(found, 1) for part in parts}
    return tags, "Machines: " + "; ".join(f"M{i} = {name}" for i, name in enumerate(_labels(found), 1)) + "."


def label(machine: dict) -> str:
    """A machine named by its CPU: "AMD EPYC (family 26 model 2 stepping 1)"."""
    return f"{_value('cpu_model', machine.get('cpu_model'))} ({_value('cpu_id', machine.get('cpu_id'))})"


def _labels(found: list[tuple[dict, list[str]]]) -> list[str]:
    """Each machine's ``label``; machines of one CPU (two instances of one VM type, say) also named by the
    identity fields they differ in (their kernel builds, typically)."""
    names = [label(m) for m, _ in found]
    for name in set(names):
        same = [m for (m, _), n in zip(found, names) if n == name]
        if len(same) < 2:
            continue
        differ = [key for key in IDENTITY_FIELDS if len({_value(key, m.get(key)) for m in same}) > 1]
        names = [n if n != name else f"{n}, " + ", ".join(f"{key.replace('_', ' ')} {_value(key, m.get(key))}"
                                                          for key in differ)
                 for (m, _), n in zip(found, names)]
    return names


def mixed_note(manifest: dict) -> str:
    """For a run whose parts ran on more than one machine: which parts ran where, and what that means for
    a comparison across parts (empty for a run on one machine)."""
    found = machines(manifest)
    if len(found) < 2:
        return ""
    return (f"Its parts ran on {len(found)} machines ({_parts_by_machine(found)}). Figures within a part are from one machine; "
            f"a comparison or claim that sets one part's figures against another's may cross machines.")


def _parts_by_machine(found: list[tuple[dict, list[str]]]) -> str:
    return "; ".join(f"{name}: {', '.join(parts)}" for name, (_, parts) in zip(_labels(found), found))


def judged_within_machines(analyse: Callable[[ResultTables], Findings], tables: ResultTables) -> Findings:
    """``analyse(tables)``, where the parts ran on more than one machine with each claim checked: a claim
    whose figure (value and 95% CI) the parts of one machine alone give is kept; one that no single
    machine's parts give sets figures from different machines against each other, and is judged not
    comparable (crosses machines), its figure kept for the reader (``findings.RULES``)."""
    findings = analyse(tables)
    found = machines(tables.manifest)
    if len(found) < 2 or not findings.claims:
        return findings
    alone = [_keyed(_analysed_parts(analyse, tables, parts)) for _, parts in found]
    claims = tuple(claim if claim.verdict == NOT_COMPARABLE or any(_same_figure(claim, a.get(key)) for a in alone)
                   else _crossing(claim, found) for key, claim in _keyed(findings.claims).items())
    crossing = sum(c.verdict == NOT_COMPARABLE and c.why.startswith(CROSSES) for c in claims)
    if not crossing:
        return findings
    note = (f"**{crossing} of the {len(claims)} claims cross machines** ({_parts_by_machine(found)}): their "
            f"figures set one machine's measurements against another's, so they are judged not comparable.")
    return replace(findings, claims=claims, markdown=f"{note}\n\n{findings.markdown}")


CROSSES = "crosses machines"


def _analysed_parts(analyse, tables: ResultTables, parts: list[str]) -> tuple[Claim, ...]:
    """The claims ``analyse`` gives from the rows of ``parts`` alone (none where those rows cannot be
    analysed on their own: a claim that needs the other parts crosses machines)."""
    frames = {name: (tables[name][tables[name]["part"].isin(parts)].reset_index(drop=True)
                     if "part" in tables[name].columns else tables[name]) for name in tables.names}
    try:
        return analyse(ResultTables(frames, tables.manifest)).claims
    except Exception:  # noqa: BLE001 - any failure means these parts alone do not give the claims
        return ()


def _keyed(claims) -> dict[tuple, Claim]:
    """Claims by (reference, statement, metric, n-th of that kind)."""
    keyed, seen = {}, {}
    for claim in claims:
        kind = (claim.reference, claim.statement, claim.metric)
        seen[kind] = seen.get(kind, -1) + 1
        keyed[(*kind, seen[kind])] = claim
    return keyed


def _same_figure(claim: Claim, other: Claim | None) -> bool:
    if other is None or other.verdict != claim.verdict:
        return False
    return all(_close(getattr(claim, name), getattr(other, name)) for name in ("value", "ci_low", "ci_high"))


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _crossing(claim: Claim, found: list[tuple[dict, list[str]]]) -> Claim:
    why = (f"{CROSSES}: no one machine's parts give this figure ({_parts_by_machine(found)}); measure the parts it "
           f"draws on, on one machine, to judge it")
    kept = {k: v for k, v in asdict(claim).items() if k not in ("verdict", "why", "cause", "cause_detail", "settle")}
    return Claim(**kept, verdict=NOT_COMPARABLE, why=why)


def card(manifest: dict) -> list[tuple[str, str]]:
    """(label, value) rows: the measuring machine (a field its parts' machines differ in lists each
    value), then the run (date, id, revision)."""
    machine = manifest.get("machine") or {}
    rows = [(name, _value(key, machine.get(key))) for key, name in MACHINE_FIELDS]
    found = machines(manifest)
    if len(found) > 1:
        rows.append(("parts by machine", _parts_by_machine(found)))
    parts = manifest.get("parts") or {}
    per_part = {"run_id", "git_rev"} if parts else set()  # one a part: in the parts table instead
    return rows + [(name, f"{len(parts)} runs, one a part: see the parts table" if key in per_part
                    else _value(key, manifest.get(key))) for key, name in RUN_FIELDS]


def parts(manifest: dict) -> list[dict]:
    """A row per part of a split measurement: when it ran, how long it took, on which CPU, from which
    revision and under what load (none for a measurement that was not split)."""
    rows = []
    for part, run in (manifest.get("parts") or {}).items():
        load, cpu = run.get("load_avg_1m") or {}, (run.get("machine") or {}).get("cpu_model")
        rows.append({"part": part, "started (UTC)": _value("started_utc", run.get("started_utc"))[:19].replace("T", " "),
                     "duration (s)": run.get("duration_s"), "CPU": _value("cpu_model", cpu),
                     "kernel": _value("kernel", (run.get("machine") or {}).get("kernel")),
                     "git revision": _value("git_rev", run.get("git_rev")),
                     "load (max / mean)": f"{load['max']:.1f} / {load['mean']:.1f}" if load else NOT_RECORDED,
                     "run id": _value("run_id", run.get("run_id"))})
    return sorted(rows, key=lambda row: row["started (UTC)"])


def versions(manifest: dict) -> list[tuple[str, str]]:
    """(what, version) rows: servers (by build), client libraries, packages."""
    recorded = manifest.get("versions") or {}
    rows = [(f"server: {k}", build_identifier(str(v))) for k, v in recorded.get("system_versions", {}).items()]
    rows += [(f"client: {k}", str(v)) for k, v in recorded.get("client_versions", {}).items()]
    return rows + [(f"package: {k}", str(v)) for k, v in recorded.get("client_packages", {}).items()]


def summary(manifest: dict) -> str:
    """One line: "2 cores (AMD EPYC), 25.3 GB memory, ext4 on /dev/vda, Debian ..., 2026-11-25 03:42 UTC"
    (where the parts ran on different machines, each value they differ in is listed: "AMD EPYC / Intel ...")."""
    m = manifest.get("machine") or {}
    started = str(manifest.get("started_utc") or NOT_RECORDED).replace("T", " ").replace("+00:00", " UTC")
    return (f"{_value('cores', m.get('cores'))} cores ({_value('cpu_model', m.get('cpu_model'))}), "
            f"{_value('memory_bytes', m.get('memory_bytes'))} memory, {_value('filesystem', m.get('filesystem'))} on "
            f"{_value('disk_device', m.get('disk_device'))}, {_value('os', m.get('os'))}, started {started}")


def card_html(manifest: dict) -> str:
    """The card as a two-column HTML table (a report's provenance; the index may show it too)."""
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                   f"{html.escape(v)}</td></tr>" for k, v in card(manifest))
    return f"<table class='sb-card'><caption>machine and run</caption>{rows}</table>"


def _value(key: str, value) -> str:
    if isinstance(value, list):  # the parts' machines differ in this field (each shown value once)
        return " / ".join(dict.fromkeys(_value(key, v) for v in value))
    if value is None or value == "" or value == "unknown":
        return NOT_RECORDED
    if key.endswith("_bytes"):
        return size(value)
    if key == "disk_rotational":
        return "yes" if value else "no"
    return str(value)
