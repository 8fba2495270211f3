"""``check`` offline from the shipped API history (core/checks/apihistory.py): a name a
release removed, a module a release brought, a renamed parameter, each read from what the
history says changed, the report's version deciding the side; a name the history never saw
changing is no finding. The data here has the shape bench/make_api_history.py writes."""

from __future__ import annotations

from typing import Any

from envbisect.core.checks.apihistory import shipped_findings
from envbisect.core.checks.observed import from_text

DATA: dict[str, Any] = {
    "since": "2022-06-01",
    "written": "2026-12-06",
    "packages": {
        "pyarrow": {
            "releases": ["19.0.0", "20.0.0", "21.0.0", "22.0.0"],
            "changes": {"21.0.0": {"names": {"pyarrow": {"-": ["PyExtensionType"]}}}},
        },
        "trl": {
            "releases": ["0.7.11", "0.8.0", "0.12.2", "0.13.0"],
            "changes": {
                "0.8.0": {"modules": {"+": ["trl.commands"]}},
                "0.13.0": {"modules": {"-": ["trl.commands"]}},
            },
        },
        "transformers": {
            "releases": ["4.45.2", "4.46.0", "4.47.0"],
            "changes": {
                "4.46.0": {
                    "params": {
                        "transformers.trainer.Trainer.__init__": {
                            "+": ["processing_class"],
                            "-": ["tokenizer"],
                        }
                    }
                }
            },
        },
    },
}


def _fixes(text: str) -> list[str]:
    obs = from_text(text, origin="report.md")
    assert obs is not None
    return [f.fix for f in shipped_findings(DATA, text, obs)]


def test_a_name_removed() -> None:
    text = "pyarrow==22.0.0\nAttributeError: module 'pyarrow' has no attribute 'PyExtensionType'"
    assert _fixes(text) == ["pip install 'pyarrow<21.0.0'"]


def test_a_module_that_came_and_went_by_the_reports_version() -> None:
    assert _fixes("trl==0.13.0\nNo module named 'trl.commands'") == [
        "pip install 'trl>=0.8.0,<0.13.0'"
    ]
    assert _fixes("trl==0.7.11\nNo module named 'trl.commands'") == ["pip install 'trl>=0.8.0'"]


def test_a_parameter_a_release_renamed() -> None:
    old = "transformers==4.45.2\nTypeError: Trainer.__init__() got an unexpected keyword argument "
    assert _fixes(old + "'processing_class'") == ["pip install 'transformers>=4.46.0'"]
    new = "transformers==4.47.0\nTypeError: Trainer.__init__() got an unexpected keyword argument "
    assert _fixes(new + "'tokenizer'") == ["pip install 'transformers<4.46.0'"]


def test_nothing_the_history_saw_change() -> None:
    assert (
        _fixes("pyarrow==22.0.0\nAttributeError: module 'pyarrow' has no attribute 'table'") == []
    )
    assert _fixes("numpy==2.0.0\nAttributeError: module 'numpy' has no attribute 'float'") == []
    text = "pyarrow==22.0.0\nAttributeError: module 'pyarrow' has no attribute 'PyExtensionType'"
    obs = from_text(text, origin="r.md")
    assert obs is not None and shipped_findings({}, text, obs) == []
