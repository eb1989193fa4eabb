"""Regenerate the committed Python code for every contract under protos/.

protoc names modules after the proto package (``hindsight.episodic.v1``); the code is installed
under ``hindsight.contracts`` so that contracts and service packages never share a name, and this
script rewrites the generated imports to match.

    python scripts/gen_protos.py          # regenerate services/contracts/
    python scripts/gen_protos.py --check  # exit 1 when the committed code is stale
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
OUTPUT = ROOT / "services" / "contracts"
_IMPORT = re.compile(r"^(from|import) hindsight\.(?!contracts\.)", re.MULTILINE)
_HEADER = '"""Generated protobuf contracts: regenerate with ``python scripts/gen_protos.py``."""\n'


def generate(destination: Path) -> None:
    """Write generated modules for every .proto file into ``destination``."""
    from grpc_tools import protoc  # imported here: only needed when generating

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    with tempfile.TemporaryDirectory() as raw:
        include = str(Path(protoc.__file__).parent / "_proto")
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--python_out={raw}",
            f"--pyi_out={raw}",
            f"--grpc_python_out={raw}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        generated = Path(raw) / "hindsight"
        for path in sorted(generated.rglob("*")):
            if path.suffix not in {".py", ".pyi"}:
                continue
            target = destination / path.relative_to(generated)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_IMPORT.sub(r"\1 hindsight.contracts.", path.read_text()))
    for package in [destination, *(p for p in destination.rglob("*") if p.is_dir())]:
        (package / "__init__.py").write_text(_HEADER if package == destination else "")


def _snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): p.read_text()
        for p in sorted(directory.rglob("*.py*"))
        if "__pycache__" not in p.parts
    }


def is_fresh() -> bool:
    """True when the committed code equals what the protos generate now."""
    with tempfile.TemporaryDirectory() as scratch:
        generate(Path(scratch))
        return _snapshot(Path(scratch)) == _snapshot(OUTPUT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed code is stale")
    args = parser.parse_args()
    if args.check:
        if is_fresh():
            print("generated contracts are up to date")
            return 0
        print("generated contracts are stale: run python scripts/gen_protos.py", file=sys.stderr)
        return 1
    shutil.rmtree(OUTPUT, ignore_errors=True)
    generate(OUTPUT)
    print(f"generated {len(_snapshot(OUTPUT))} files under {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
