"""NeMo Gym's dataset rows made from ``progress-sql export`` (no nemo_gym import: the conversion runs in
any environment). A NeMo Gym row is one JSON object per line: ``responses_create_params`` (the model's
request, whose ``input`` is the exported prompt: the environment's own opening) and the task fields at
the top level, as its SQL servers read them (``resources_servers/bird_sql``: ``question``, ``gt_sql``,
``db_id`` beside ``responses_create_params``). Ours are the flat fields of a TRL row
(:func:`~progress_sql.export.formats.example_fields` and the shared ``extra_info``), so
:func:`~progress_sql.export.formats.trl_example` and
:func:`~progress_sql.export.formats.row_env_config` read a NeMo Gym row unchanged."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError, DatasetError
from progress_sql.export.formats import GOLD_FIELD, trl_example, write_rows
from progress_sql.integrations.hosted import load_rows
from progress_sql.types import Example

#: The key of a NeMo Gym row holding the model's request (``BaseRunRequest.responses_create_params``).
REQUEST_FIELD = "responses_create_params"
#: The key of a NeMo Gym row naming the agent server that runs it (rollout collection routes by it).
AGENT_REF_FIELD = "agent_ref"


def task_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The flat task fields of an exported row of any format (verl, SkyRL, TRL, or a NeMo Gym row):
    the ``extra_info`` fields, ``gold_sql`` and ``data_source``, without the prompt."""
    if REQUEST_FIELD in row or GOLD_FIELD in row:  # NeMo Gym or TRL rows are flat already
        return {k: v for k, v in row.items() if k not in (REQUEST_FIELD, AGENT_REF_FIELD, "prompt")}
    for truth_key in ("reward_spec", "reward_model"):  # SkyRL, verl
        truth, info = row.get(truth_key), row.get("extra_info")
        if isinstance(truth, Mapping) and isinstance(info, Mapping):
            fields = {**info, GOLD_FIELD: truth.get("ground_truth")}
            if "data_source" in row:
                fields["data_source"] = row["data_source"]
            return fields
    raise DatasetError(
        f"a row with keys {sorted(row)} is none of progress-sql export's formats (verl, skyrl, trl, nemo-gym)"
    )


def row_prompt(row: Mapping[str, Any]) -> list[dict[str, str]]:
    """The row's opening messages: the exported ``prompt`` or a NeMo Gym row's request input."""
    request = row.get(REQUEST_FIELD)
    messages = request.get("input") if isinstance(request, Mapping) else row.get("prompt")
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise DatasetError(
            "a row lacks its prompt (prompt, or responses_create_params.input): write rows with progress-sql export"
        )
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def row_task(fields: Mapping[str, Any]) -> Example:
    """The example of a NeMo Gym row's task fields (or of a verify request's body)."""
    return trl_example(fields)


def nemo_gym_row(row: Mapping[str, Any], *, agent: str | None = None) -> dict[str, Any]:
    """The NeMo Gym row of one exported row; ``agent`` names the agent server in ``agent_ref`` (rollout
    collection needs it when several agents are configured). A row that does not read is a
    :class:`DatasetError` naming what it lacks."""
    fields = task_fields(row)
    row_task(fields)  # checked here, so a bad row fails at conversion rather than at its first verify
    converted: dict[str, Any] = {REQUEST_FIELD: {"input": row_prompt(row)}, **fields}
    if agent:
        converted[AGENT_REF_FIELD] = {"type": "responses_api_agents", "name": agent}
    return converted


def nemo_gym_rows(
    rows: Iterable[Mapping[str, Any]], *, agent: str | None = None, where: str = "rows"
) -> list[dict[str, Any]]:
    """Every row converted (:func:`nemo_gym_row`); an error names the row's number."""
    converted = []
    for number, row in enumerate(rows, start=1):
        try:
            converted.append(nemo_gym_row(row, agent=agent))
        except DatasetError as error:
            raise DatasetError(f"{where}, row {number}: {error}") from None
    if not converted:
        raise DatasetError(f"{where} holds no rows")
    return converted


def convert(source: str | Path, out: str | Path, *, agent: str | None = None) -> int:
    """Write the NeMo Gym rows of the exported file ``source`` to ``out`` (``.jsonl``); the row count."""
    target = Path(out)
    if target.suffix != ".jsonl":
        raise ConfigError(f"NeMo Gym reads JSON Lines: {target} should end in .jsonl")
    rows = nemo_gym_rows(load_rows(source), agent=agent, where=str(source))
    write_rows(rows, target)
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m progress_sql.integrations.nemo_gym.rows EXPORTED OUT.jsonl [AGENT]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 3):
        print(
            "usage: python -m progress_sql.integrations.nemo_gym.rows EXPORTED OUT.jsonl [AGENT_NAME]", file=sys.stderr
        )
        return 2
    try:
        count = convert(args[0], args[1], agent=args[2] if len(args) == 3 else None)
    except (ConfigError, DatasetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {count} NeMo Gym rows to {args[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
