"""datasets-json: the minimal repro from LLaMA-Factory debugging sessions.

Writes small alpaca-shaped (JSON) and sharegpt-shaped (JSONL) datasets, loads each with
datasets.load_dataset('json', data_files=...), indexes a row, maps with num_proc 1 and 2, and
does it again with keep_in_memory=True. The segfaults people report happen in these calls.
"""

import json
import os
import time

from _common import report, require

require("datasets")

import datasets  # after the check: a failure inside this import is the bug

here = os.getcwd()
os.environ.setdefault("HF_DATASETS_CACHE", os.path.join(here, "hf-datasets-cache"))

alpaca = [
    {
        "instruction": "Say hello %d" % i,
        "input": "" if i % 2 else "to #%d" % i,
        "output": "Hello %d" % i,
    }
    for i in range(64)
]
sharegpt = [
    {
        "conversations": [
            {"from": "human", "value": "Question %d?" % i},
            {"from": "gpt", "value": "Answer %d." % i},
        ],
        "system": "You are helpful.",
    }
    for i in range(64)
]
alpaca_path = os.path.join(here, "alpaca.json")
sharegpt_path = os.path.join(here, "sharegpt.jsonl")
with open(alpaca_path, "w", encoding="utf-8") as fh:
    json.dump(alpaca, fh)
with open(sharegpt_path, "w", encoding="utf-8") as fh:
    for row in sharegpt:
        fh.write(json.dumps(row) + "\n")


def to_prompt(example):
    if "instruction" in example:
        text = example["instruction"] + "\n" + (example["input"] or "")
    else:
        text = "\n".join(turn["value"] for turn in example["conversations"])
    return {"prompt_len": len(text)}


timings = {}
for label, path in (("alpaca", alpaca_path), ("sharegpt", sharegpt_path)):
    for keep in (False, True):
        start = time.perf_counter()
        ds = datasets.load_dataset(
            "json",
            data_files=path,
            split="train",
            keep_in_memory=keep,
            cache_dir=os.path.join(here, "hf-cache-%s-%s" % (label, keep)),
        )
        row = ds[0]
        if len(ds) != 64:
            raise AssertionError("expected 64 rows, got %d" % len(ds))
        if not row:
            raise AssertionError("the first row is empty")
        for num_proc in (1, 2):
            mapped = ds.map(to_prompt, num_proc=num_proc, keep_in_memory=keep)
            if not (len(mapped) == 64 and mapped[63]["prompt_len"] > 0):
                raise AssertionError("map lost rows")
        timings["%s keep_in_memory=%s" % (label, keep)] = round(time.perf_counter() - start, 3)

import pyarrow

report(
    probe="datasets-json",
    datasets=datasets.__version__,
    pyarrow=pyarrow.__version__,
    seconds=timings,
)
