"""The role-to-model table: defaults < user file < family.toml [llm] < env < command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vx.llm.config import (
    DEFAULT_ROLES,
    ROLES,
    LLMConfigError,
    Price,
    has_credentials,
    load_config,
    parse_model_overrides,
)


def test_defaults_cover_every_role():
    cfg = load_config(env={})
    assert (
        set(cfg.roles)
        == set(ROLES)
        == {"solver", "teacher", "composer", "synthesizer", "judge", "final_judge", "skill_synthesizer"}
    )
    assert cfg.roles == DEFAULT_ROLES


def test_precedence_of_sources(tmp_path):
    user = tmp_path / "llm.toml"
    user.write_text(
        'budget_usd = 1.5\n[judge]\nmodel = "user-judge"\nmax_tokens = 77\n'
        '[teacher]\nmodel = "user-teacher"\n[composer]\ntemperature = 0.3\n'
    )
    family = {"judge": {"model": "family-judge"}, "teacher": {"model": "family-teacher"}, "concurrency": 2}
    env = {"VX_LLM_JUDGE_MODEL": "env-judge", "VX_LLM_BUDGET_USD": "0.75", "VX_LLM_COMPOSER_MAX_TOKENS": "900"}
    cfg = load_config(family, env=env, user_path=user, overrides={"judge.model": "cli-judge"})
    assert cfg.role("judge").model == "cli-judge"  # command line beats env
    assert cfg.role("judge").max_tokens == 77  # user file, untouched by others
    assert cfg.role("teacher").model == "family-teacher"  # family beats user file
    assert cfg.role("composer").temperature == 0.3 and cfg.role("composer").max_tokens == 900
    assert cfg.budget_usd == 0.75 and cfg.concurrency == 2
    assert cfg.role("solver") == DEFAULT_ROLES["solver"]
    assert cfg.sources["judge.model"] == "command line"
    assert cfg.sources["teacher.model"].endswith("[llm]")
    assert cfg.sources["budget_usd"] == "$VX_LLM_BUDGET_USD"


def test_env_file_location(tmp_path):
    p = tmp_path / "elsewhere.toml"
    p.write_text('[final_judge]\nmodel = "strong"\n')
    assert load_config(env={"VX_LLM_CONFIG": str(p)}).role("final_judge").model == "strong"


@pytest.mark.parametrize(
    "table, match",
    [
        ({"api_key": "sk-..."}, "never read from configuration files"),
        ({"judgee": {"model": "x"}}, "did you mean 'judge'"),
        ({"judge": {"modle": "x"}}, "has no setting 'modle'"),
        ({"judge": {"max_tokens": "many"}}, "must be int"),
        ({"judge": {"temperature": 3}}, "between 0 and 1"),
        ({"judge": {"model": " "}}, "non-empty"),
        ({"budget_usd": -1}, "positive"),
        ({"concurrency": 0}, "at least 1"),
        ({"prices": {"m": {"input": 1}}}, "numeric 'input' and 'output'"),
        ({"judge": "haiku"}, "must be a table"),
    ],
)
def test_bad_values_are_explained_with_their_source(table, match):
    with pytest.raises(LLMConfigError, match=match) as info:
        load_config(table, family_path="/fam/family.toml", env={})
    assert "/fam/family.toml [llm]" in str(info.value)


def test_bad_env_and_toml_are_explained(tmp_path):
    with pytest.raises(LLMConfigError, match=r"VX_LLM_JUDGE_MAX_TOKENS='lots' is not a number"):
        load_config(env={"VX_LLM_JUDGE_MAX_TOKENS": "lots"})
    bad = tmp_path / "llm.toml"
    bad.write_text("[judge\n")
    with pytest.raises(LLMConfigError, match="invalid TOML"):
        load_config(user_path=bad, env={})


def test_model_overrides_from_the_command_line():
    assert parse_model_overrides(["judge=claude-haiku-4-5", "teacher = big"]) == {
        "judge.model": "claude-haiku-4-5",
        "teacher.model": "big",
    }
    with pytest.raises(LLMConfigError, match="ROLE=MODEL"):
        parse_model_overrides(["judge"])
    with pytest.raises(LLMConfigError, match="unknown role 'juge'"):
        parse_model_overrides(["juge=x"])


def test_prices_and_unknown_models():
    cfg = load_config({"prices": {"my-model": {"input": 2, "output": 4}}}, env={})
    assert cfg.price("my-model") == Price(2.0, 4.0)
    assert cfg.price("claude-haiku-4-5").cost(1_000_000, 0) == pytest.approx(1.0)
    # an unknown model is charged at a high rate so the budget still binds
    assert cfg.price("mystery").input >= max(p.input for p in cfg.prices.values())


def test_credentials_are_detected_not_read():
    assert not has_credentials({})
    assert not has_credentials({"ANTHROPIC_API_KEY": "  "})
    assert has_credentials({"ANTHROPIC_API_KEY": "sk-x"})
    assert has_credentials({"ANTHROPIC_AUTH_TOKEN": "tok"})
    assert "sk-x" not in repr(load_config(env={"ANTHROPIC_API_KEY": "sk-x"}).as_dict())


def test_relative_cache_paths_are_relative_to_their_file(tmp_path):
    fam = tmp_path / "fam"
    cfg = load_config({"cache": "llm.sqlite"}, family_path=fam / "family.toml", env={})
    assert cfg.cache == fam / "llm.sqlite"
    cfg = load_config({"cache": "/abs/llm.sqlite"}, family_path=fam / "family.toml", env={})
    assert str(cfg.cache) == "/abs/llm.sqlite"
    assert load_config(env={"VX_LLM_CACHE": "rel.sqlite"}).cache == Path("rel.sqlite")
