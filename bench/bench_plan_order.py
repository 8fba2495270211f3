"""Benchmark: the resolver's preference order on LLaMA-Factory releases' pins (real PyPI).

Run from the repository root: ``python bench/bench_plan_order.py`` (needs PyPI). For each
question (a release pinned with ``torch==2.13.0``, and the descent's kind: the same with one
package's version passed as a constraint) resolvelib runs over the same provider twice, with
the order before issue 38 (exact pins, backtrack causes, direct, name) and with today's
(constraints count as pins, capped projects before uncapped ones), side by side on a warm
metadata cache: rounds, wall time (median of ``--repeat``) and the environment found, next to
``uv pip compile``'s answer to the same question. "gave up" is resolvelib past 3000 rounds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from resolvelib import BaseReporter, Resolver
from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

from envbisect.core.plan import PlanTarget, Policy
from envbisect.core.planprovider import Provider, Req
from envbisect.core.resolve import MAX_ROUNDS
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.env.uvplan import parse_pins
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig

QUESTIONS: list[tuple[str, list[str], dict[str, str]]] = [
    ("llamafactory 0.9.0", ["llamafactory==0.9.0", "torch==2.13.0"], {}),
    ("llamafactory 0.8.3", ["llamafactory==0.8.3", "torch==2.13.0"], {}),
    ("0.8.3, transformers==4.47.1 as a constraint",
     ["llamafactory==0.8.3", "torch==2.13.0"], {"transformers": "==4.47.1"}),
    ("llmtuner 0.6.3", ["llmtuner==0.6.3", "torch==2.13.0"], {}),
    ("llamafactory 0.9.5", ["llamafactory==0.9.5", "torch==2.13.0"], {}),
]  # fmt: skip


class Before(Provider):
    """The preference order before issue 38."""

    def get_preference(self, identifier, resolutions, candidates, information, backtrack_causes):  # type: ignore[no-untyped-def]
        infos = list(information[identifier])
        pinned = any(
            any(
                s.operator in ("==", "===") and "*" not in s.version
                for s in i.requirement.req.specifier
            )
            for i in infos
        )
        causes = {self.identify(c.requirement) for c in backtrack_causes}
        direct = any(i.parent is None for i in infos)
        return (not pinned, identifier not in causes, not direct, identifier)


class Rounds(BaseReporter):  # type: ignore[type-arg]
    def __init__(self) -> None:
        self.rounds = 0

    def starting_round(self, index: int) -> None:
        self.rounds = index + 1


Answer = tuple[str, int, float, dict[str, str]]


def resolve(
    kind: type[Provider],
    reqs: Sequence[str],
    cons: Mapping[str, str],
    source: IndexMetadataSource,
    ptarget: PlanTarget,
) -> Answer:
    names = frozenset(canonicalize_name(Requirement(r).name) for r in reqs)
    constraints = {canonicalize_name(k): SpecifierSet(v) for k, v in cons.items()}
    provider = kind(source, ptarget, policy=Policy.LATEST, baseline={}, cutoff=None, pre=False,
                    user_names=names, constraints=constraints)  # fmt: skip
    reporter = Rounds()
    start = time.perf_counter()
    try:
        result = Resolver(provider, reporter).resolve(
            [Req(Requirement(r), None) for r in reqs], max_rounds=MAX_ROUNDS
        )
    except ResolutionTooDeep:
        return "gave up", reporter.rounds, time.perf_counter() - start, {}
    except ResolutionImpossible:
        return "impossible", reporter.rounds, time.perf_counter() - start, {}
    pins = {str(c.name): str(c.version) for c in result.mapping.values()}
    return "resolved", reporter.rounds, time.perf_counter() - start, pins


def uv_answer(python: str, reqs: Sequence[str], cons: Mapping[str, str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp) / "c.txt"
        c.write_text("".join(f"{k}{v}\n" for k, v in cons.items()))
        out = subprocess.run([find_uv(), "pip", "compile", "--no-config", "-q", "--python", python,
                              "--only-binary", ":all:", "-c", str(c), "-"],
                             input="\n".join(reqs), capture_output=True, text=True,
                             env=Uv(binary=find_uv(), offline=False).env())  # fmt: skip
    return {str(k): str(v) for k, v in parse_pins(out.stdout).items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default="3.11")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    python, target = locate(Uv(binary=find_uv(), offline=False), args.python, None)
    ptarget = PlanTarget(markers=target.marker_environment(), python_version=target.python_version)
    print(f"# CPython {target.python_version}, PyPI; rounds, median wall of {args.repeat} (warm)")
    print("| question | before | now | ratio | same as uv (now) |")
    print("|---|---|---|---:|---|")
    with IndexClient(IndexConfig(), cache_dir=Path(tempfile.mkdtemp())) as client:
        source = IndexMetadataSource(client, target)
        for label, reqs, cons in QUESTIONS:
            resolve(Provider, reqs, cons, source, ptarget)  # warm the metadata
            got = {}
            for kind in (Before, Provider):
                runs = [resolve(kind, reqs, cons, source, ptarget) for _ in range(args.repeat)]
                how, rounds, _, pins = runs[-1]
                got[kind] = (how, rounds, statistics.median(r[2] for r in runs), pins)
            uv = uv_answer(python, reqs, cons)
            b, n = got[Before], got[Provider]
            same = {k: v for k, v in n[3].items()} == uv if n[0] == "resolved" else "-"
            print(f"| {label} | {b[0]}, {b[1]} rounds, {b[2]:.1f} s | {n[0]}, {n[1]} rounds, "
                  f"{n[2]:.1f} s | {b[2] / n[2]:.1f}x | {same} |")  # fmt: skip
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
