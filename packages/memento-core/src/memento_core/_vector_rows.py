"""The candidate index's unit vectors: float32 rows by position, kept in blocks.

One array that doubles as it fills copies everything stored at each doubling, and the recall
that triggers it waits: growing to 204,800 rows took 853 ms here (102,400: 460 ms). Blocks of
``BLOCK_ROWS`` rows are added without moving what is stored; only the first block grows by
doubling, up to one block (a 24 MiB copy at most; measured with 200-row adds to 300,000
rows: the slowest took 46 ms, against 853 ms with one array).

The product reads only the rows a viewer may see. A partition loads into consecutive rows, so
those usually form a few runs, each a product over a view; rows scattered over too many runs
are gathered first, a copy (50,000 of 200,000 rows in 200 runs: 9 ms, against 32 ms gathered).
"""

from __future__ import annotations

from typing import Any

BLOCK_ROWS = 16_384
"""Rows a block holds: 24 MiB of 384-dimensional vectors."""
MAX_RUNS = 256
"""Above this many runs of consecutive visible rows in a block, its product gathers them."""


class VectorRows:
    """Rows by position: ``put`` writes at any position below ``reserve``'s; the caller
    serialises access (``CandidateIndex`` holds its lock)."""

    def __init__(self) -> None:
        self.width = 0
        self._blocks: list[Any] = []

    def reserve(self, rows: int, width: int) -> None:
        """Room for positions below ``rows``; what is stored stays where it is."""
        import numpy as np

        self.width = width
        while self.capacity < rows:
            if not self._blocks:
                size = min(BLOCK_ROWS, max(64, rows))
                self._blocks.append(np.zeros((size, width), dtype=np.float32))
            elif len(self._blocks[0]) < BLOCK_ROWS:
                first = self._blocks[0]
                grown = np.zeros((min(BLOCK_ROWS, max(2 * len(first), rows)), width), np.float32)
                grown[: len(first)] = first
                self._blocks[0] = grown
            else:
                self._blocks.append(np.zeros((BLOCK_ROWS, width), dtype=np.float32))

    @property
    def capacity(self) -> int:
        return sum(len(block) for block in self._blocks)

    def put(self, start: int, units: Any) -> None:
        """Write ``units`` (rows) at positions ``start`` onwards."""
        done = 0
        while done < len(units):
            block, offset = divmod(start + done, BLOCK_ROWS)
            count = min(len(units) - done, BLOCK_ROWS - offset)
            self._blocks[block][offset : offset + count] = units[done : done + count]
            done += count

    def row(self, position: int) -> Any:
        block, offset = divmod(position, BLOCK_ROWS)
        return self._blocks[block][offset]

    def take(self, positions: Any) -> Any:
        """The rows at ``positions`` (sorted), copied into one array."""
        import numpy as np

        parts = [block[offsets] for block, offsets in self._by_block(positions)]
        return np.concatenate(parts) if parts else np.zeros((0, self.width), np.float32)

    def similarity(self, visible: Any, unit: Any) -> Any:
        """``unit``'s product with the rows at ``visible`` (sorted positions), in that order."""
        import numpy as np

        parts = [_product(block, offsets, unit) for block, offsets in self._by_block(visible)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def _by_block(self, positions: Any) -> list[tuple[Any, Any]]:
        """(block, offsets in it) for the blocks that ``positions`` (sorted) fall in."""
        import numpy as np

        if not len(positions):
            return []
        bounds = np.searchsorted(positions, np.arange(len(self._blocks) + 1) * BLOCK_ROWS)
        return [
            (block, positions[lo:hi] - n * BLOCK_ROWS)
            for n, (block, lo, hi) in enumerate(zip(self._blocks, bounds[:-1], bounds[1:]))
            if hi > lo
        ]


def _product(block: Any, offsets: Any, unit: Any) -> Any:
    import numpy as np

    breaks = np.flatnonzero(np.diff(offsets) != 1) + 1
    if breaks.size < MAX_RUNS:
        starts = np.concatenate(([0], breaks)).tolist()
        ends = np.concatenate((breaks, [offsets.size])).tolist()
        return np.concatenate(
            [block[offsets[s] : offsets[e - 1] + 1] @ unit for s, e in zip(starts, ends)]
        )
    if 2 * offsets.size < offsets[-1] + 1:
        return np.take(block, offsets, axis=0) @ unit
    return (block[: offsets[-1] + 1] @ unit)[offsets]
