#!/usr/bin/env python3
"""Computes each range rule's confidence from labelled models, and checks or writes it into the rules file.

A verdict the ranges decide claims the rule's candidates (fp16|fp32, bf16|fp32), so a rule's confidence is how
often that claim held: of the labelled models it fires on, how many were trained in one of its candidates,
smoothed by Laplace's rule of succession, (k + 1) / (n + 2), so that 10 of 10 reads 0.92 and not certainty. The
basis says the count and how the models split among the candidates ("10 of 10 ... (9 fp16, 1 fp32)"). A rule that
fires on none of them takes the count of a rule it implies (every model it fires on, that rule fires on too), and
says so. The labelled models are docs/labelled-models.csv: seed 000's table (stas00's notebook, 23 language
models of 2020-2022) and fp32-trained vision and audio models shipped in PyPI wheels (its source column says
which).

  scripts/calibrate_rules.py            prints the calibration table (docs/method.md quotes it)
  scripts/calibrate_rules.py --check    exits 1 when the rules file's confidences or bases differ (ctest)
  scripts/calibrate_rules.py --write    writes them into the rules file
"""
import argparse
import csv
import json
import operator
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "src/classify/default_rules.json"
LABELLED = ROOT / "docs/labelled-models.csv"
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def fires(rule, model):
    """None when the model's row lacks a statistic the rule needs (it cannot calibrate that rule)."""
    result = True
    for condition in rule["when"]:
        if condition["stat"] not in model:
            return None
        result = result and OPS[condition["op"]](model[condition["stat"]], condition["value"])
    return result


def implies(narrow, wide):
    """True when every model `narrow` fires on, `wide` fires on too: each of wide's conditions follows from one
    of narrow's on the same statistic with a threshold at least as strict."""
    def follows(have, need):
        if have["stat"] != need["stat"]:
            return False
        if need["op"][0] != have["op"][0]:  # one bounds from below, the other from above
            return False
        stricter = have["value"] > need["value"] if need["op"][0] == ">" else have["value"] < need["value"]
        # on equal thresholds a strict bound implies either, a non-strict one only a non-strict one
        return stricter or (have["value"] == need["value"] and (have["op"] == need["op"] or len(have["op"]) == 1))
    return all(any(follows(have, need) for have in narrow["when"]) for need in wide["when"])


def count(rule, models):
    fired = [m for m in models if fires(rule, m)]
    return {"fired": len(fired),
            "within": sum(m["label"] in rule["candidates"] for m in fired),
            "split": {label: sum(m["label"] == label for m in fired) for label in rule["candidates"]},
            "calibratable": all(fires(rule, m) is not None for m in models)}


def succession(within, fired):
    """Laplace's rule of succession: the chance the next model the rule fires on is within its candidates."""
    return round((within + 1) / (fired + 2), 2)


def population(models):
    seed = sum(m["source"].startswith("stas00/ml-ways") for m in models)
    return f"docs/labelled-models.csv ({seed} language models of seed 000, {len(models) - seed} PyPI-shipped models)"


def calibrate(rules, models):
    """{rule id: (confidence, basis)}; a rule no labelled model can calibrate keeps neither."""
    counts = {rule["id"]: count(rule, models) for rule in rules}
    result = {}
    for rule in rules:
        c, via = counts[rule["id"]], None
        if c["calibratable"] and c["fired"] == 0:
            via = next((w for w in rules if w is not rule and w["candidates"] == rule["candidates"]
                        and counts[w["id"]]["fired"] and implies(rule, w)), None)
            c = counts[via["id"]] if via else c
        if not c["calibratable"] or c["fired"] == 0:
            continue
        split = ", ".join(f"{n} {label}" for label, n in c["split"].items())
        basis = (f"{c['within']} of {c['fired']} labelled models it fires on were pretrained in "
                 f"{'|'.join(rule['candidates'])} ({split}); (k+1)/(n+2): {population(models)}")
        if via:
            basis = (f"no labelled model reaches it; each model it fires on, {via['id']} fires on too, whose count "
                     f"it takes: " + basis.replace(" it fires on", f" {via['id']} fires on"))
        result[rule["id"]] = (succession(c["within"], c["fired"]), basis)
    return result


def read_models():
    with open(LABELLED, newline="") as f:
        return [{k: (v if k in ("model", "label", "source") else float(v)) for k, v in row.items()}
                for row in csv.DictReader(f)]


def write(text, calibration):
    """Rewrites each rule's confidence and basis in place, keeping the file's layout."""
    for rule_id, (confidence, basis) in calibration.items():
        start = text.index(f'"id": "{rule_id}"')
        end = text.find('"id": ', start + 1)
        end = len(text) if end < 0 else end
        block = re.sub(r'"confidence": [0-9.]+', f'"confidence": {confidence}', text[start:end], count=1)
        basis_line = f'"basis": {json.dumps(basis)}'
        if '"basis": ' in block:
            block = re.sub(r'"basis": "(?:[^"\\]|\\.)*"', lambda _: basis_line, block, count=1)
        else:
            block = re.sub(r'("confidence": [0-9.]+,\n)(\s*)', lambda m: f"{m.group(1)}{m.group(2)}{basis_line},\n{m.group(2)}",
                           block, count=1)
        text = text[:start] + block + text[end:]
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    text = RULES.read_text()
    rules = json.loads(text)["rules"]
    models = read_models()
    calibration = calibrate(rules, models)
    if args.write:
        RULES.write_text(write(text, calibration))
        return 0
    if args.check:
        stale = [r["id"] for r in rules if r["id"] in calibration
                 and (r["confidence"], r.get("basis")) != calibration[r["id"]]]
        for rule_id in stale:
            print(f"calibrate_rules: {rule_id}: the rules file says {next(r for r in rules if r['id'] == rule_id)['confidence']}, "
                  f"the labelled models {calibration[rule_id][0]}: run scripts/calibrate_rules.py --write", file=sys.stderr)
        return 1 if stale else 0
    print(f"{len(models)} labelled models ({', '.join(sorted({m['label'] for m in models}))}) from {LABELLED.name}\n")
    print("| rule | claims | fires on | within the claim | split | confidence |")
    print("|---|---|---|---|---|---|")
    for rule in rules:
        c = count(rule, models)
        confidence = calibration.get(rule["id"], (None,))[0]
        split = ", ".join(f"{n} {label}" for label, n in c["split"].items())
        print(f"| {rule['id']} | {'|'.join(rule['candidates'])} | {c['fired']} | {c['within']} | {split} | "
              f"{confidence if confidence is not None else 'n/a'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
