"""Hatch build hook: compile ``hotwords._hotfeed``, the detector's optional C fast path.

The extension is one C file with no dependencies but Python's headers, so it is compiled with
the compiler Python was built with (``sysconfig``'s ``LDSHARED``; ``CC`` in the environment
overrides the compiler). A wheel gets the compiled module and a platform tag; an editable install
gets it next to the sources, which is where the editable install imports from.

Without a working compiler (or with ``MEMENTO_PURE_PYTHON=1`` set at build time), the hook warns
and builds a pure-Python wheel: ``memento_core.hotwords`` then runs its pure-Python path, with the
same detections.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("src", "memento_core", "hotwords", "_hotfeed.c")


class HotfeedBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        filename = "_hotfeed" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
        in_place = Path(self.root, SOURCE).with_name(filename)
        if version == "editable":
            output = in_place
        else:
            self._temporary = tempfile.TemporaryDirectory(prefix="memento-hotfeed-")
            output = Path(self._temporary.name, filename)
        problem = self._compile(output)
        if problem is not None:
            if version == "editable":
                in_place.unlink(missing_ok=True)  # never leave an older build to be imported
            self.app.display_warning(_no_fast_path_warning(problem))
            return
        if version != "editable":
            build_data["force_include"][str(output)] = f"memento_core/hotwords/{filename}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        temporary = getattr(self, "_temporary", None)
        if temporary is not None:
            temporary.cleanup()

    def _compile(self, output: Path) -> str | None:
        """Compile the extension to ``output``; return why not, or None once it is built."""
        if os.environ.get("MEMENTO_PURE_PYTHON", "").strip() not in ("", "0"):
            return "MEMENTO_PURE_PYTHON is set"
        linker = sysconfig.get_config_var("LDSHARED")
        include = sysconfig.get_paths().get("include")
        if os.name == "nt" or not linker or not include:
            return "no Unix-style compiler configuration in sysconfig"
        command = shlex.split(linker)
        if os.environ.get("CC"):
            command[0] = os.environ["CC"]
        command += ["-O2", "-fPIC", "-I", include, str(Path(self.root, SOURCE)), "-o", str(output)]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
        except FileNotFoundError:
            return f"no compiler: {command[0]} not found"
        except subprocess.CalledProcessError as error:
            output.unlink(missing_ok=True)
            # Compilers write diagnostics to stderr, some wrappers to stdout; either may be empty.
            said = "\n".join(p.strip() for p in (error.stderr, error.stdout) if p and p.strip())
            said = said[-2000:] if said else "it printed nothing"
            return f"{shlex.join(command)} exited with status {error.returncode}:\n{said}"
        except (OSError, subprocess.TimeoutExpired) as error:
            output.unlink(missing_ok=True)
            return f"the compiler could not run: {error}"
        return None


def _no_fast_path_warning(problem: str) -> str:
    """The build log's warning: what failed, what it costs, how to get the fast path."""
    rule = "=" * 78
    return (
        f"{rule}\n"
        "memento-core: WARNING: the hotword detector's C fast path (memento_core._hotfeed) was\n"
        "NOT built, because:\n"
        f"  {problem.replace(chr(10), chr(10) + '  ')}\n"
        "memento-core works without it (the pure-Python path finds the same hotwords), but\n"
        "streaming hotword detection is about 6x slower. To build it, install a C compiler\n"
        "and Python's headers (Debian/Ubuntu: apt install gcc python3-dev; Fedora: dnf install\n"
        "gcc python3-devel; macOS: xcode-select --install), then reinstall without the cache:\n"
        "  pip install --force-reinstall --no-deps --no-cache-dir memento-core\n"
        "To check an install (True once built):\n"
        '  python -c "import importlib.util as u; '
        "print(bool(u.find_spec('memento_core._hotfeed')))\"\n"
        f"{rule}"
    )
