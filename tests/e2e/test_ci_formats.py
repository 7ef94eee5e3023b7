"""Issue 61, results where CI shows them: --format sarif against the OASIS schema and GitHub's required properties,
--format github's annotations through a parser of the actions toolkit's escaping, the job summary, --format junit
through junitparser and --format gitlab against GitLab's documented keys; fingerprints that hold across runs and
checkouts; and the composite action's steps run with a fake GitHub environment."""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import jsonschema
import torch
import yaml
from junitparser import Error as JUnitError
from junitparser import Failure, JUnitXml, Skipped
from safetensors.torch import save_file

from helpers import BINARY, REPO, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import malicious_corpus  # noqa: E402

SARIF_SCHEMA = REPO / "tests" / "schemas" / "sarif-schema-2.1.0.json"
ACTION = REPO / ".github" / "actions" / "precdetect" / "action.yml"
# A weight file's name with every character the toolkit escapes in a property (and a newline, which Linux allows).
ODD_NAME = "odd,na:me 100%\nx.safetensors"
MANY = 12  # models failing one gate: more than GitHub's 10 annotations of a type


def write_checkpoints(folder):
    """The findings of every family: an unsafe import, tampering (a bare pickle, also unreadable), an fp16 overflow
    and a NaN tensor in one model, a missing model, and MANY models over --max-abs."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil.pt").write_bytes(malicious_corpus.torch_file(malicious_corpus.Reduce(os.system, "true")))
    name, data, kind = malicious_corpus.tampering_cases()["build-on-allowed-function"]
    (folder / "tampered.pkl").write_bytes(data)
    risky = torch.ones(64)
    risky[0], risky[1] = 1e6, float("nan")
    save_file({"w": risky}, str(folder / "risky.safetensors"))
    (folder / "many").mkdir(exist_ok=True)
    for i in range(MANY):
        save_file({"w": torch.full((4,), 2.0)}, str(folder / "many" / f"m{i:02}.safetensors"))
    save_file({"w": torch.full((4,), 2.0)}, str(folder / ODD_NAME))
    return ["evil.pt", "tampered.pkl", "risky.safetensors", "absent.safetensors", ODD_NAME,
            *(f"many/m{i:02}.safetensors" for i in range(MANY))]


GATES = ["--fail-if-unsafe", "--max-abs", "1"]
# Where these tests run under GitHub Actions, no run of theirs may write to the real job summary.
NOT_IN_ACTIONS = {"GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": ""}


def ci_run(fmt, cwd, inputs, *extra, env=None):
    """precdetect --format FMT with the gates, on `inputs` (relative to `cwd`)."""
    return run("--format", fmt, "-q", *GATES, *extra, *inputs, cwd=cwd, env={**NOT_IN_ACTIONS, **(env or {})})


def unescape_data(text):
    """The inverse of the toolkit's escapeData (packages/core/src/command.ts): %0D, %0A, then %25 last."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text):
    """The inverse of escapeProperty: %3A and %2C too."""
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_commands(text):
    """Workflow commands as the runner reads them: `::name k=v,k=v::message` a line; a property value or message
    holds no raw ',' / ':' (properties) or line break, so splitting on them is exact once escaped."""
    commands = []
    for line in text.splitlines():
        match = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", line)
        if not match:
            continue
        name, properties, message = match.groups()
        fields = dict(item.split("=", 1) for item in properties.split(",")) if properties else {}
        commands.append((name, {k: unescape_property(v) for k, v in fields.items()}, unescape_data(message)))
    return commands


def github_sarif_problems(log):
    """GitHub's required SARIF properties (github/docs content/code-security/reference/code-scanning/sarif-files/
    sarif-support.md, "Supported SARIF output file properties"), as a list of what is wrong; empty when none."""
    problems = []

    def need(value, where):
        if value in (None, "", [], {}):  # "The empty string is not supported for required properties."
            problems.append(f"{where}: missing or empty")

    need(log.get("$schema"), "$schema")
    if log.get("version") != "2.1.0":
        problems.append("version is not 2.1.0")
    need(log.get("runs"), "runs")
    for r, run_ in enumerate(log.get("runs", [])):
        driver = run_.get("tool", {}).get("driver", {})
        need(driver.get("name"), f"runs[{r}].tool.driver.name")
        rules = driver.get("rules")
        if rules is None:
            problems.append(f"runs[{r}].tool.driver.rules: missing")
        for i, rule in enumerate(rules or []):
            for key in ("shortDescription", "fullDescription", "help"):
                need(rule.get(key, {}).get("text"), f"rules[{i}].{key}.text")
            need(rule.get("id"), f"rules[{i}].id")
            severity = rule.get("properties", {}).get("security-severity")
            if severity is not None and not 0.1 <= float(severity) <= 10:
                problems.append(f"rules[{i}]: security-severity {severity} outside 0.1-10")
        if "results" not in run_:
            problems.append(f"runs[{r}].results: missing")
        for i, result in enumerate(run_.get("results", [])):
            where = f"results[{i}]"
            need(result.get("message", {}).get("text"), f"{where}.message.text")
            index = result.get("ruleIndex")
            if index is None or not 0 <= index < len(rules or []) or rules[index]["id"] != result.get("ruleId"):
                problems.append(f"{where}: ruleIndex {index} does not point at ruleId {result.get('ruleId')}")
            locations = result.get("locations", [])
            if not 1 <= len(locations) <= 10:
                problems.append(f"{where}: {len(locations)} locations (1 to 10)")
            need(result.get("partialFingerprints", {}).get("primaryLocationLineHash"),
                 f"{where}.partialFingerprints.primaryLocationLineHash")
            for location in locations:
                physical = location.get("physicalLocation", {})
                uri = physical.get("artifactLocation", {}).get("uri")
                need(uri, f"{where}.artifactLocation.uri")
                if uri and (uri.startswith("/") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", uri)):
                    problems.append(f"{where}: uri {uri} is not relative to the repository")
                region = physical.get("region", {})
                for key in ("startLine", "startColumn", "endLine", "endColumn"):
                    if not isinstance(region.get(key), int) or region[key] < 1:
                        problems.append(f"{where}.region.{key}: {region.get(key)}")
    if len(gzip.compress(json.dumps(log).encode())) > 10 * 1024 * 1024:
        problems.append("over 10 MB gzipped")
    return problems


def fingerprints(log):
    return [(r["ruleId"], r["partialFingerprints"]["primaryLocationLineHash"]) for r in log["runs"][0]["results"]]


class CiFormats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="precdetect-ci-")
        cls.checkout = Path(cls.temp.name) / "checkout"
        cls.inputs = [f"models/{name}" for name in write_checkpoints(cls.checkout / "models")]
        cls.json_file = Path(cls.temp.name) / "document.json"
        cls.sarif_run = ci_run("sarif", cls.checkout, cls.inputs, "--json-output", cls.json_file)
        cls.sarif = json.loads(cls.sarif_run.stdout)
        cls.document = json.loads(cls.json_file.read_text())

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def ci(self, fmt, *extra, cwd=None, inputs=None, env=None):
        return ci_run(fmt, cwd or self.checkout, self.inputs if inputs is None else inputs, *extra, env=env)

    def results(self, rule):
        return [r for r in self.sarif["runs"][0]["results"] if r["ruleId"] == rule]

    # ---- SARIF ----
    def test_sarif_is_valid_against_the_oasis_schema(self):
        schema = json.loads(SARIF_SCHEMA.read_text())
        errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(self.sarif), key=str)
        self.assertEqual(errors, [])
        self.assertEqual(self.sarif_run.returncode, 1)  # the gates' exit status, whatever the format

    def test_the_schema_check_catches_what_is_not_sarif(self):
        broken = json.loads(json.dumps(self.sarif))
        broken["runs"][0]["results"][0]["level"] = "fatal"
        del broken["runs"][0]["tool"]
        schema = json.loads(SARIF_SCHEMA.read_text())
        self.assertGreaterEqual(len(list(jsonschema.Draft4Validator(schema).iter_errors(broken))), 2)

    def test_sarif_has_githubs_required_properties(self):
        self.assertEqual(github_sarif_problems(self.sarif), [])
        broken = json.loads(json.dumps(self.sarif))
        result = broken["runs"][0]["results"][0]
        result["ruleIndex"] += 1
        result["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "file:///abs/x.pt"
        broken["runs"][0]["tool"]["driver"]["rules"][0]["help"]["text"] = ""
        self.assertEqual(len(github_sarif_problems(broken)), 4, github_sarif_problems(broken))

    def test_one_rule_per_kind_of_finding_named_by_the_vocabulary(self):
        rules = {rule["id"]: rule for rule in self.sarif["runs"][0]["tool"]["driver"]["rules"]}
        expected = {"safety/unsafe-import", "safety/tampering/state_on_code", "fp16-risk/overflow",
                    "tensor/non-finite", "gate/fail-if-unsafe", "gate/max-abs"}
        self.assertLessEqual(expected, set(rules))
        self.assertEqual(len(rules), len(self.sarif["runs"][0]["tool"]["driver"]["rules"]))  # each once
        for rule_id, rule in rules.items():
            security = "security-severity" in rule["properties"]
            self.assertEqual(security, rule_id.startswith("safety/"), rule_id)
            self.assertEqual("security" in rule["properties"]["tags"], security, rule_id)
        self.assertEqual(rules["safety/unsafe-import"]["defaultConfiguration"]["level"], "error")
        self.assertEqual(rules["fp16-risk/overflow"]["defaultConfiguration"]["level"], "warning")

    def test_one_result_per_finding_on_its_file_relative_to_the_working_directory(self):
        [unsafe] = self.results("safety/unsafe-import")
        self.assertEqual(unsafe["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "models/evil.pt")
        self.assertIn("system", unsafe["message"]["text"])
        self.assertEqual(len(self.results("gate/max-abs")), MANY + 2)  # many/*, the odd name, risky
        [nonfinite] = self.results("tensor/non-finite")
        self.assertIn("w holds 1 NaN", nonfinite["message"]["text"])
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in self.results("gate/max-abs")}
        self.assertIn("models/odd,na:me%20100%25%0Ax.safetensors", uris)  # a URI reference, percent-encoded
        for result in self.sarif["runs"][0]["results"]:
            region = result["locations"][0]["physicalLocation"]["region"]
            self.assertEqual(region, {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1})

    def test_a_model_that_could_not_be_read_is_a_tool_execution_notification(self):
        invocation = self.sarif["runs"][0]["invocations"][0]
        self.assertFalse(invocation["executionSuccessful"])
        notes = invocation["toolExecutionNotifications"]
        self.assertEqual({n["descriptor"]["id"] for n in notes}, {"model/unreadable"})
        texts = " ".join(n["message"]["text"] for n in notes)
        self.assertIn("absent.safetensors", texts)
        self.assertIn("tampered.pkl", texts)
        self.assertNotIn("model/unreadable", {r["ruleId"] for r in self.sarif["runs"][0]["results"]})
        clean = self.ci("sarif", inputs=["models/many/m00.safetensors"])
        self.assertTrue(json.loads(clean.stdout)["runs"][0]["invocations"][0]["executionSuccessful"])

    def test_fingerprints_hold_across_runs_and_checkouts(self):
        first = fingerprints(self.sarif)
        self.assertEqual(len(set(first)), len(first))  # no two findings share one
        self.assertEqual(fingerprints(json.loads(self.ci("sarif").stdout)), first)
        other = Path(self.temp.name) / "elsewhere" / "another-checkout"
        shutil.copytree(self.checkout, other)
        self.assertEqual(fingerprints(json.loads(self.ci("sarif", cwd=other).stdout)), first)
        # From above the checkout, --sarif-root names the repository: the same paths, the same fingerprints.
        above = self.ci("sarif", "--sarif-root", other.name, cwd=other.parent,
                        inputs=[f"{other.name}/{name}" for name in self.inputs])
        self.assertEqual(fingerprints(json.loads(above.stdout)), first)
        self.assertNotIn(str(self.checkout), json.dumps(first))

    # ---- GitHub annotations and the job summary ----
    def test_annotations_are_capped_at_ten_of_a_type_then_a_notice_counts_the_rest(self):
        result = self.ci("github")
        self.assertEqual(result.returncode, 1)
        commands = parse_commands(result.stdout)
        errors = [c for c in commands if c[0] == "error"]
        self.assertEqual(len(errors), 10)
        notices = [c for c in commands if c[0] == "notice"]
        self.assertEqual(commands[-1][0], "notice")
        self.assertLessEqual(len(notices), 10)
        findings = self.sarif["runs"][0]["results"] + self.sarif["runs"][0]["invocations"][0][
            "toolExecutionNotifications"]
        errors_found = sum(1 for f in findings if f["level"] == "error")
        self.assertIn(f"{errors_found - 10} errors", commands[-1][2])
        self.assertEqual(errors[0][1]["line"], "1")

    def test_escaping_round_trips_through_the_toolkits_rules(self):
        result = self.ci("github", inputs=[f"models/{ODD_NAME}"])
        [(name, properties, message)] = parse_commands(result.stdout)
        self.assertEqual(name, "error")
        self.assertEqual(properties["file"], f"models/{ODD_NAME}")
        self.assertEqual(properties["title"], "Gate failed: --max-abs [precdetect gate/max-abs]")
        self.assertEqual(message, f"models/{ODD_NAME}: abs max 2 exceeds 1 (--max-abs)")
        self.assertEqual(len(result.stdout.splitlines()), 1)  # the newline in the name stayed escaped

    def test_the_job_summary_holds_the_table(self):
        summary = Path(self.temp.name) / "summary.md"
        summary.write_text("earlier step\n")
        self.ci("github", env={"GITHUB_STEP_SUMMARY": str(summary)})
        text = summary.read_text()
        self.assertTrue(text.startswith("earlier step\n"), text[:100])  # appended, not replaced
        self.assertIn("| name | abs min |", text)
        self.assertIn("| models/many/m11.safetensors |", text)
        self.assertIn("| models/absent.safetensors | - |", text)
        self.assertIn(f"| models/{ODD_NAME.replace(chr(10), ' ')} |", text)  # one row, even for a newline

    def test_annotate_adds_annotations_on_stderr_only_under_github_actions(self):
        summary = Path(self.temp.name) / "annotate.md"
        inside = self.ci("sarif", "--annotate",
                         env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
        json.loads(inside.stdout)  # stdout is still the SARIF log
        self.assertEqual(len([c for c in parse_commands(inside.stderr) if c[0] == "error"]), 10)
        self.assertIn("| name |", summary.read_text())
        summary.unlink()
        outside = self.ci("sarif", "--annotate", env={"GITHUB_STEP_SUMMARY": str(summary)})
        self.assertEqual(parse_commands(outside.stderr), [])
        self.assertFalse(summary.exists())
        both = self.ci("github", "--annotate", env={"GITHUB_ACTIONS": "true"})
        self.assertEqual(parse_commands(both.stderr), [])  # on stdout already: never twice
        self.assertEqual(both.stdout, self.ci("github").stdout)

    # ---- JUnit ----
    def test_junit_parses_with_a_test_case_per_model_and_gate(self):
        result = self.ci("junit")
        path = Path(self.temp.name) / "junit.xml"
        path.write_text(result.stdout)
        suites = {suite.name: suite for suite in JUnitXml.fromfile(str(path))}
        self.assertEqual(set(suites), set(self.inputs))
        by_input = {m["input"]: m for m in self.document["models"]}
        for name, suite in suites.items():
            cases = {case.name: case for case in suite}
            self.assertEqual(set(cases), {"scan", "--fail-if-unsafe", "--max-abs"}, name)
            model = by_input[name]
            for gate in ("--fail-if-unsafe", "--max-abs"):
                reasons = [r for r in model["gate_failures"] if f"({gate}" in r]
                failures = [r for r in cases[gate].result if isinstance(r, Failure)]
                self.assertEqual([f.message for f in failures], ["; ".join(reasons)] if reasons else [], name)
            errors = [r for r in cases["scan"].result if isinstance(r, JUnitError)]
            self.assertEqual([e.type for e in errors], [model["error"]["code"]] if model["error"] else [], name)
        skipped = [r for r in suites["models/absent.safetensors"]
                   if any(isinstance(x, Skipped) for x in r.result)]
        self.assertEqual([case.name for case in skipped], ["--max-abs"])  # never judged: nothing was read
        self.assertEqual(suites["models/risky.safetensors"].failures, 1)

    # ---- GitLab Code Quality ----
    def test_gitlab_report_has_the_documented_keys_and_the_sarif_findings(self):
        issues = json.loads(self.ci("gitlab").stdout)
        self.assertIsInstance(issues, list)
        for issue in issues:
            # docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format: the required keys
            for key in ("description", "check_name", "fingerprint", "severity"):
                self.assertIsInstance(issue[key], str, key)
                self.assertTrue(issue[key], key)
            self.assertIn(issue["severity"], {"info", "minor", "major", "critical", "blocker"})
            self.assertIsInstance(issue["location"]["path"], str)
            self.assertFalse(issue["location"]["path"].startswith("/"))
            self.assertIsInstance(issue["location"]["lines"]["begin"], int)
            self.assertGreaterEqual(issue["location"]["lines"]["begin"], 1)
        self.assertEqual(len({i["fingerprint"] for i in issues}), len(issues))
        # One list of findings behind every format: SARIF's results and notifications are GitLab's issues.
        self.assertEqual({(i["check_name"], i["fingerprint"]) for i in issues if i["check_name"] != "model/unreadable"},
                         set(fingerprints(self.sarif)))
        severities = {i["check_name"]: i["severity"] for i in issues}
        self.assertEqual(severities["safety/unsafe-import"], "critical")
        self.assertEqual(severities["gate/max-abs"], "major")
        self.assertEqual(severities["fp16-risk/overflow"], "minor")


# ---- the composite action (.github/actions/precdetect/action.yml) ----
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def fake_wheel(folder):
    """A wheel named precdetect whose `precdetect` command runs the binary under test: what the action installs is
    a wheel by path, and the real one takes minutes to build."""
    import zipfile

    wheel = folder / "precdetect-0.0.0-py3-none-any.whl"
    info = "precdetect-0.0.0.dist-info"
    files = {
        "precdetect/__init__.py": "",
        "precdetect/_launcher.py": f"import os, sys\ndef main():\n    os.execv({BINARY!r}, [{BINARY!r}, *sys.argv[1:]])\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: precdetect\nVersion: 0.0.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nprecdetect = precdetect._launcher:main\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"]))
    return wheel


def action_env(workspace, output, summary):
    """What the runner gives a step: the GITHUB_* files and flags, nothing of the machine's own Actions run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
    return {**env, "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ENV": str(output) + ".env",
            "GITHUB_ACTION_PATH": str(ACTION.parent), "RUNNER_TEMP": str(workspace.parent)}


def run_action(inputs, workspace, summary):
    """Runs the action's `run:` steps in order as the runner does (bash --noprofile --norc -eo pipefail, the step's
    env with its ${{ }} expressions resolved from the inputs and earlier steps' outputs), stopping at the first that
    fails; returns the steps as [(step, CompletedProcess or None for a `uses:` step)] and the outputs by step id."""
    action = yaml.safe_load(ACTION.read_text())
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    outputs, ran = {}, []

    def resolve(match):
        scope, _, rest = match.group(1).partition(".")
        if scope == "inputs":
            return values[rest]
        if scope == "github" and rest == "action_path":
            return str(ACTION.parent)
        step, _, key = rest.partition(".outputs.")
        return outputs.get(step, {}).get(key, "")

    for index, step in enumerate(action["runs"]["steps"]):
        if "run" not in step:
            ran.append((step, None))
            continue
        output = workspace.parent / f"github-output-{index}"
        output.write_text("")
        env = action_env(workspace, output, summary)
        env.update({name: EXPRESSION.sub(resolve, str(value)) for name, value in step.get("env", {}).items()})
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
        outputs[step.get("id", "")] = dict(line.split("=", 1) for line in output.read_text().splitlines())
        ran.append((step, result))
        if result.returncode != 0:
            break
    return ran, outputs


class CompositeAction(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = tempfile.TemporaryDirectory(prefix="precdetect-action-")
        root = Path(cls.temp.name)
        cls.wheel = fake_wheel(root)
        cls.venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(cls.venv)], check=True)
        cls.python = str(cls.venv / "bin" / "python")

    @classmethod
    def tearDownClass(cls):
        cls.temp.cleanup()

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory(prefix="job-", dir=self.temp.name)
        self.workspace = Path(self.scratch.name) / "workspace"
        (self.workspace / "models").mkdir(parents=True)
        save_file({"w": torch.full((4,), 2.0)}, str(self.workspace / "models" / "with space.safetensors"))
        self.summary = Path(self.scratch.name) / "summary.md"

    def tearDown(self):
        self.scratch.cleanup()

    def run_action(self, **inputs):
        return run_action({"wheel": str(self.wheel), "python": self.python, **inputs}, self.workspace, self.summary)

    def test_a_failed_gate_writes_sarif_annotations_and_summary_then_fails_the_step(self):
        steps, outputs = self.run_action(args="'models/with space.safetensors' --max-abs 1", **{"upload-sarif": "true"})
        names = [step["name"] for step, _ in steps]
        self.assertEqual(names, ["Install precdetect", "Scan", "Upload SARIF to code scanning",
                                 "Fail on precdetect's exit status"])
        install, scan, upload, fail = (result for _, result in steps)
        self.assertEqual(install.returncode, 0, install.stderr)
        self.assertEqual(scan.returncode, 0, scan.stderr)  # the status is kept for after the upload
        self.assertEqual(outputs["scan"], {"exit-code": "1", "output": "precdetect.sarif"})
        log = json.loads((self.workspace / "precdetect.sarif").read_text())
        self.assertEqual(github_sarif_problems(log), [])
        uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        self.assertEqual(uri, "models/with%20space.safetensors")  # relative to the workspace, quotes kept
        self.assertEqual([c[0] for c in parse_commands(scan.stderr)], ["error"])
        self.assertIn("| models/with space.safetensors |", self.summary.read_text())
        upload_step = steps[2][0]
        self.assertEqual(upload_step["uses"].split("@")[0], "github/codeql-action/upload-sarif")
        self.assertIn("inputs.upload-sarif == 'true'", upload_step["if"])
        self.assertIn("always()", upload_step["if"])  # uploaded although the gate failed
        self.assertEqual(upload_step["with"]["sarif_file"], "${{ steps.scan.outputs.output }}")
        self.assertEqual(fail.returncode, 1)

    def test_a_passing_scan_passes_and_writes_the_format_asked_for(self):
        steps, outputs = self.run_action(args="models", format="gitlab")
        self.assertEqual([r.returncode for _, r in steps if r is not None], [0, 0, 0])
        self.assertEqual(outputs["scan"], {"exit-code": "0", "output": "precdetect.json"})
        self.assertEqual(json.loads((self.workspace / "precdetect.json").read_text()), [])
        self.assertIn("| models | 2.000e+00 |", self.summary.read_text())

    def test_upload_without_sarif_is_refused_by_name(self):
        steps, outputs = self.run_action(args="models", format="junit", **{"upload-sarif": "true"})
        scan = steps[1][1]
        [(name, _, message)] = parse_commands(scan.stdout)
        self.assertEqual((name, message), ("error", "upload-sarif needs format sarif, not junit"))
        self.assertEqual(outputs["scan"]["exit-code"], "3")
        self.assertEqual(steps[-1][1].returncode, 3)


if __name__ == "__main__":
    unittest.main()
