"""The CLI's error wrapper: what a person sees when a command meets a missing file or a bare missing key."""

from __future__ import annotations

import click
import pytest

from vx.cli.common import UserError, friendly_errors


def test_a_file_that_vanished_is_a_message_not_a_traceback(tmp_path) -> None:
    missing = tmp_path / "gone" / "tasks.jsonl"

    @friendly_errors
    def read() -> str:
        return missing.read_text()

    with pytest.raises(UserError) as info:
        read()
    assert info.value.message == f"{missing}: no such file"
    assert isinstance(info.value, click.ClickException) and info.value.exit_code != 0


def test_other_os_errors_are_not_disguised_as_missing_files(tmp_path) -> None:
    @friendly_errors
    def read() -> str:
        return tmp_path.read_text()  # a directory: IsADirectoryError, not vx's to explain

    with pytest.raises(IsADirectoryError):
        read()
