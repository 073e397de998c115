"""Hotword benchmark: streaming detection against the raw Aho–Corasick automaton, build, limits.

A deterministic hotword set of 10,000 memories × 5 variants (Hangul names, spaced Hangul, Latin
names, two-word Latin, digits + Hangul) and a 5 MB (UTF-8) mixed Hangul and Latin stream that
mentions a variant about every 2 KB, fed to one conversation in chunks of 1–16 characters.

It reports, in the same run:

- streaming throughput of ``Conversation.feed`` (MB/s of UTF-8 input) and the raw automaton's
  throughput over the whole prepared text (normalised, as UTF-8 bytes), and their ratio, from
  runs taken in alternation so that machine load hits both alike;
- per-chunk latency (p50, p99, max) of ``feed``, timed chunk by chunk in a separate run;
- two floors for any per-chunk design: streamed normalisation plus the resumable search
  (``iter().set()`` per chunk) without the detector's bookkeeping, and the resumable search alone
  over chunks normalised beforehand; and the "tail buffer" alternative (a fresh ``iter()`` over the
  last longest-key bytes plus the chunk), which the detector does not use;
- build time and memory of the set and the automaton (which is the cost of an update), the
  fingerprint time, and a per-character automaton for comparison with the UTF-8 byte one;
- with ``--million`` (on by default), validation and build time and memory for 1,000,000 variants.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/hotwords.py [--no-million] [--out DIR]

Throughputs use process CPU time (``time.process_time``), which other jobs on a shared machine
disturb less than wall-clock time; wall-clock figures are recorded too, with the load average.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ahocorasick

from memento_core.detector import HotwordDetector
from memento_core.hotwords import HotwordEntry, HotwordSet
from memento_core.normalisation import StreamNormaliser, normalise_text

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results"
SEED = 20_240_601
LATIN = "abcdefghijklmnopqrstuvwxyz"


def hangul_word(rng: random.Random, low: int, high: int) -> str:
    return "".join(chr(0xAC00 + rng.randrange(11_172)) for _ in range(rng.randint(low, high)))


def latin_word(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(LATIN) for _ in range(rng.randint(low, high)))


def make_variants(rng: random.Random) -> list[str]:
    """Five variants of one name, in the shapes real hotword lists have."""
    hangul = hangul_word(rng, 2, 4)
    latin = latin_word(rng, 4, 8).capitalize()
    candidates = [
        hangul,
        f"{hangul[:2]} {hangul[2:] or hangul_word(rng, 1, 2)}",
        latin,
        f"{latin} {latin_word(rng, 3, 7).capitalize()}",
        f"{rng.randint(1, 999)}{hangul_word(rng, 1, 2)}",
    ]
    return list(dict.fromkeys(candidates))  # keep order, drop the rare duplicate


def make_stream(rng: random.Random, hotword_set: HotwordSet, megabytes: float) -> str:
    """Mixed Hangul and Latin prose-like text mentioning a variant about every 2 KB."""
    entries = list(hotword_set)
    words: list[str] = []
    size, target, next_mention = 0, int(megabytes * 1_000_000), 0
    while size < target:
        if size >= next_mention:
            word = rng.choice(rng.choice(entries).variants)
            word = word.upper() if rng.random() < 0.2 else word
            next_mention = size + rng.randint(1_000, 3_000)
        elif rng.random() < 0.5:
            word = hangul_word(rng, 1, 4)
        else:
            word = latin_word(rng, 1, 9)
        word += rng.choice([" ", " ", " ", " ", ", ", ". ", "\n"])
        words.append(word)
        size += len(word.encode("utf-8"))
    return "".join(words)


def split(rng: random.Random, text: str) -> list[str]:
    chunks, position = [], 0
    while position < len(text):
        length = rng.randint(1, 16)
        chunks.append(text[position : position + length])
        position += length
    return chunks


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure_build(build: Callable[[], Any], *, trace: bool) -> tuple[Any, dict[str, float]]:
    """Run ``build``; time it and measure the memory it leaves: RSS growth, and with ``trace``
    what tracemalloc sees retained (Python objects and pyahocorasick's nodes) in a second run,
    since tracing itself slows the build and inflates RSS."""
    gc.collect()
    rss_before = rss_bytes()
    wall, cpu = time.perf_counter(), time.process_time()
    result = build()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    gc.collect()
    measured = {
        "seconds_wall": round(wall, 3),
        "seconds_cpu": round(cpu, 3),
        "rss_growth_mb": round((rss_bytes() - rss_before) / 1e6, 1),
    }
    if trace:
        tracemalloc.start()
        again = build()
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del again
        measured["retained_mb_tracemalloc"] = round(current / 1e6, 1)
        measured["peak_mb_tracemalloc"] = round(peak / 1e6, 1)
    return result, measured


def timed(run: Callable[[], object]) -> tuple[float, float]:
    gc.disable()  # collections would land on whichever run happens to trigger them
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        gc.enable()


def percentile(sorted_values: list[int], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def benchmark_stream(
    detector: HotwordDetector, text: str, chunks: list[str], rounds: int
) -> dict[str, Any]:
    megabytes = len(text.encode("utf-8")) / 1e6
    prepared = normalise_text(text).encode("utf-8").decode("latin-1")
    automaton = detector._automaton  # the raw automaton the detector built
    longest = detector._window_bytes
    events: list[int] = []

    def raw() -> None:
        for _ in automaton.iter(prepared):
            pass

    def stream() -> None:
        conversation = detector.conversation("bench")
        count = 0
        for chunk in chunks:
            count += len(conversation.feed(chunk))
        events.append(count + len(conversation.flush()))

    encoded_chunks = [normalise_text(c).encode("utf-8").decode("latin-1") for c in chunks]

    def normalise_and_search() -> None:  # the floor for any design that normalises per chunk
        normaliser = StreamNormaliser()
        search = automaton.iter("")
        for chunk in chunks:
            delta = normaliser.extend(chunk)  # the fast path, as Conversation.feed takes it
            if delta is None:
                _, delta, _ = normaliser.push(chunk)  # (never replaces in this text)
            search.set(delta.encode("utf-8").decode("latin-1"), False)
            for _ in search:
                pass

    def bare_search() -> None:  # resumable search per chunk, nothing else: a floor for streaming
        search = automaton.iter("")
        for chunk in encoded_chunks:
            search.set(chunk, False)
            for _ in search:
                pass

    def tail_buffer() -> None:  # the alternative design: rescan the tail plus each chunk
        tail = ""
        for chunk in encoded_chunks:
            window = tail + chunk
            for end, _ in automaton.iter(window):
                if end >= len(tail):
                    pass
            tail = window[-longest:]

    runs: dict[str, list[tuple[float, float]]] = {
        name: [] for name in ("raw", "stream", "normalise_and_search", "bare_search", "tail_buffer")
    }
    for _ in range(rounds):
        runs["raw"].append(timed(raw))
        runs["stream"].append(timed(stream))
        runs["normalise_and_search"].append(timed(normalise_and_search))
        runs["bare_search"].append(timed(bare_search))
        runs["tail_buffer"].append(timed(tail_buffer))

    latencies: list[int] = []
    conversation = detector.conversation("latency")
    clock = time.perf_counter_ns
    for chunk in chunks:
        start = clock()
        conversation.feed(chunk)
        latencies.append(clock() - start)
    latencies.sort()

    def throughput(name: str, index: int) -> float:
        return round(megabytes / statistics.median(run[index] for run in runs[name]), 2)

    ratios = [
        raw_run[1] / stream_run[1] for raw_run, stream_run in zip(runs["raw"], runs["stream"])
    ]
    return {
        "text_mb_utf8": round(megabytes, 2),
        "text_chars": len(text),
        "chunks": len(chunks),
        "mean_chunk_chars": round(len(text) / len(chunks), 2),
        "rounds": rounds,
        "events_per_stream": events[0],
        "throughput_mb_s_cpu": {name: throughput(name, 1) for name in runs},
        "throughput_mb_s_wall": {name: throughput(name, 0) for name in runs},
        "stream_vs_raw_cpu": round(statistics.median(ratios), 3),
        "stream_vs_raw_cpu_per_round": [round(r, 3) for r in ratios],
        "latency_us": {
            "p50": round(percentile(latencies, 0.50) / 1000, 2),
            "p99": round(percentile(latencies, 0.99) / 1000, 2),
            "p999": round(percentile(latencies, 0.999) / 1000, 2),
            "max": round(latencies[-1] / 1000, 1),
        },
    }


def char_automaton_throughput(hotword_set: HotwordSet, text: str) -> float:
    """The same keys inserted as characters rather than UTF-8 bytes: why the detector uses bytes."""
    automaton = ahocorasick.Automaton()
    for index, entry in enumerate(hotword_set):
        for form in entry.matched_forms:
            automaton.add_word(form, index)
    automaton.make_automaton()
    prepared = normalise_text(text)
    _, cpu = timed(lambda: sum(1 for _ in automaton.iter(prepared)))
    return round(len(text.encode("utf-8")) / 1e6 / cpu, 2)


def benchmark_million(rng: random.Random) -> dict[str, Any]:
    raw = [{"uid": f"u{index:07d}", "v": make_variants(rng)} for index in range(200_000)]
    while sum(len(entry["v"]) for entry in raw) < 1_000_000:  # top up the rare short ones
        raw.append({"uid": f"x{len(raw):07d}", "v": [latin_word(rng, 6, 12)]})
    hotword_set, validate = measure_build(lambda: HotwordSet.from_json(raw), trace=False)
    detector, build = measure_build(lambda: HotwordDetector(hotword_set), trace=False)
    conversation = detector.conversation("c")
    mention = next(iter(hotword_set)).variants[0]
    assert conversation.feed_message(f"hello {mention} there"), "the big set still detects"
    return {"variants": hotword_set.variant_count, "validate": validate, "build": build}


def conversation_size(detector: HotwordDetector) -> int:
    """Bytes of a fresh conversation: the object, its containers and its search iterator."""
    conversation = detector.conversation("size")
    parts = [getattr(conversation, name) for name in type(conversation).__slots__]
    parts.append(conversation._normaliser)
    return sys.getsizeof(conversation) + sum(sys.getsizeof(part) for part in parts)


def write_markdown(results: dict[str, Any], path: Path) -> None:
    stream, build = results["stream"], results["build"]
    cpu, wall = stream["throughput_mb_s_cpu"], stream["throughput_mb_s_wall"]

    def per_chunk(name: str) -> float:
        """CPU µs per chunk, from a throughput."""
        return float(stream["text_mb_utf8"] / cpu[name] / stream["chunks"] * 1e6)

    lines = [
        "# Hotword detection benchmark",
        "",
        f"`{results['command']}` — {results['machine']}, load average {results['load_average']}",
        "",
        f"Set: {build['memories']:,} memories × "
        f"{build['variants'] / build['memories']:.1f} variants "
        f"({build['variants']:,}); stream: {stream['text_mb_utf8']} MB UTF-8 "
        f"({stream['text_chars']:,} characters) in {stream['chunks']:,} chunks of 1–16 characters "
        f"(mean {stream['mean_chunk_chars']}), {stream['events_per_stream']} events.",
        "",
        "| | MB/s (CPU time) | MB/s (wall clock) |",
        "|---|---:|---:|",
        f"| raw automaton, whole prepared text | {cpu['raw']} | {wall['raw']} |",
        f"| **streaming, `Conversation.feed` per chunk** | **{cpu['stream']}** "
        f"| {wall['stream']} |",
        f"| floor: streamed normalisation + resumable search, no bookkeeping "
        f"| {cpu['normalise_and_search']} | {wall['normalise_and_search']} |",
        f"| floor: resumable search per chunk (chunks normalised beforehand) "
        f"| {cpu['bare_search']} | {wall['bare_search']} |",
        f"| alternative: tail buffer + fresh `iter()` | {cpu['tail_buffer']} "
        f"| {wall['tail_buffer']} |",
        f"| per-character automaton, whole text | {results['char_automaton_mb_s']} | |",
        "",
        f"Streaming / raw (median of {stream['rounds']} paired rounds, CPU time): "
        f"**{stream['stream_vs_raw_cpu']:.0%}** (target ≥ 50%). The floors show where the time "
        "goes: advancing the automaton chunk by chunk over chunks normalised beforehand, and "
        f"nothing else, reaches {cpu['bare_search'] / cpu['raw']:.0%}; normalising each chunk as "
        f"it streams brings that to {cpu['normalise_and_search'] / cpu['raw']:.0%}. Per chunk "
        f"of {stream['mean_chunk_chars']} characters, the raw automaton spends "
        f"{per_chunk('raw'):.2f} µs, the bare resumable search {per_chunk('bare_search'):.2f} µs "
        f"and `feed` {per_chunk('stream'):.2f} µs; 50% would leave "
        f"{2 * per_chunk('raw') - per_chunk('bare_search'):.2f} µs for normalisation, "
        "bookkeeping and the call itself, less than a few Python-level string operations take "
        "(and the Python work between chunks also costs the automaton cache misses in its large "
        "trie). Closing the gap needs the per-chunk work compiled, not further Python tuning.",
        "",
        f"Per-chunk latency of `feed`: p50 {stream['latency_us']['p50']} µs, "
        f"**p99 {stream['latency_us']['p99']} µs** (target ≤ 50 µs), "
        f"p99.9 {stream['latency_us']['p999']} µs, max {stream['latency_us']['max']} µs.",
        "",
        "| build (the cost of an update) | CPU s | wall s | RSS growth MB | retained MB |",
        "|---|---:|---:|---:|---:|",
    ]
    rows = [(f"{name}, {build['variants']:,} variants", build[name]) for name in ("validate",)]
    rows.append((f"automaton, {build['variants']:,} variants", build["automaton"]))
    million = results.get("million")
    if million:
        rows.append((f"validate, {million['variants']:,} variants", million["validate"]))
        rows.append((f"automaton, {million['variants']:,} variants", million["build"]))
    for label, row in rows:
        lines.append(
            f"| {label} | {row['seconds_cpu']} | {row['seconds_wall']} | {row['rss_growth_mb']} "
            f"| {row.get('retained_mb_tracemalloc', '–')} |"
        )
    lines += [
        "",
        "Validate = parsing the JSON form into a checked, normalised `HotwordSet`; automaton = "
        "`HotwordDetector(...)`. Retained MB is what tracemalloc sees after the build (Python "
        "objects and pyahocorasick's nodes); RSS growth also counts freed but unreturned memory.",
    ]
    lines += [
        "",
        f"Fingerprint of the {build['memories']:,}-memory set: {build['fingerprint_ms']} ms CPU, "
        "so checking whether a set changed is cheap next to rebuilding it. A conversation's own "
        f"state is {results['conversation_bytes']} bytes.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-million", dest="million", action="store_false")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    rng = random.Random(SEED)
    entries = [
        HotwordEntry(f"m{index:07d}", tuple(make_variants(rng)), {"rank": index})
        for index in range(args.memories)
    ]
    source = HotwordSet(entries).to_list(payloads=True)
    hotword_set, validate = measure_build(lambda: HotwordSet.from_json(source), trace=True)
    detector, automaton = measure_build(lambda: HotwordDetector(hotword_set), trace=True)
    fresh_copy = HotwordSet(hotword_set)  # so the cached fingerprint is not reused
    started = time.process_time()
    assert fresh_copy.fingerprint == hotword_set.fingerprint
    fingerprint_ms = round((time.process_time() - started) * 1000, 1)
    text = make_stream(rng, hotword_set, args.megabytes)
    chunks = split(rng, text)

    results: dict[str, Any] = {
        "command": " ".join(
            ["HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/hotwords.py", *sys.argv[1:]]
        ),
        "machine": f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}",
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "build": {
            "memories": len(hotword_set),
            "variants": hotword_set.variant_count,
            "validate": validate,
            "automaton": automaton,
            "fingerprint_ms": fingerprint_ms,
        },
        "stream": benchmark_stream(detector, text, chunks, args.rounds),
        "char_automaton_mb_s": char_automaton_throughput(hotword_set, text),
        "conversation_bytes": conversation_size(detector),
    }
    if args.million:
        del detector, hotword_set, text, chunks
        gc.collect()
        results["million"] = benchmark_million(rng)
    results["load_average_after"] = [round(load, 2) for load in os.getloadavg()]

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hotwords.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    write_markdown(results, args.out / "hotwords.md")
    print((args.out / "hotwords.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
