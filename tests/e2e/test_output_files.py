"""What -o (and --json-output, --report, and the results cache) do with each kind of path: a regular file is replaced whole, a
link's target too with the link kept, and a device, a FIFO or a descriptor is written as it is, never replaced.

Device nodes are made with mknod in a scratch folder, and the machine's own /dev/null and /dev/stderr are only ever
named inside a private mount namespace whose /dev is a fresh tmpfs: a failing test cannot damage the machine."""

import json
import os
import stat
import threading
import unittest

import torch
from safetensors.torch import save_file

from helpers import BINARY, ROOT, ScanTestCase, in_private_mounts, namespace_available, run, scan


class OutputFiles(ScanTestCase):
    def setUp(self):
        super().setUp()
        self.model = self.tmp / "m.safetensors"
        save_file({"w": torch.randn(16, 16), "b": torch.randn(16)}, self.model)
        code, self.document, _ = scan(self.model)
        self.assertEqual(code, 0)

    def null_device(self, name="null"):
        if not ROOT:
            self.skipTest("mknod needs root (CI runs as root)")
        path = self.tmp / name
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return path

    def assertNullDevice(self, path):
        status = os.lstat(path)
        self.assertTrue(stat.S_ISCHR(status.st_mode), f"{path} is no longer a character device")
        self.assertEqual(status.st_rdev, os.makedev(1, 3))

    def test_a_device_node_stays_a_device_for_every_file_precdetect_writes(self):
        null = self.null_device()
        part = self.tmp / "part.jsonl"
        part.write_text(run("--shard", "0/1", "--jsonl", self.model).stdout)
        commands = {
            "scan -o": ["--json", "-o", null, self.model],
            "scan --json-output": ["--json-output", null, self.model],
            "scan --report": ["--report", null, self.model],
            "diff -o": ["diff", "--json", "-o", null, self.model, self.model],
            "diff --json-output": ["diff", "--json-output", null, self.model, self.model],
            "merge -o": ["merge", "-o", null, part],
            "merge --report": ["merge", "--report", null, part],
        }
        for what, arguments in commands.items():
            with self.subTest(what):
                result = run(*arguments)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertNullDevice(null)
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir()),
                         ["m.safetensors", "null", "part.jsonl"])

    @unittest.skipUnless(namespace_available(), "needs root and unshare (a private mount namespace)")
    def test_dev_null_and_dev_stderr_themselves_are_written_in_place(self):
        # The namespace's /dev is a tmpfs holding a real null device and the usual links, so a precdetect that
        # replaced them would replace these copies, and the checks below would see it.
        result = in_private_mounts("""
            mount -t tmpfs tmpfs /dev
            mknod -m 666 /dev/null c 1 3
            ln -s /proc/self/fd/1 /dev/stdout
            ln -s /proc/self/fd/2 /dev/stderr
            "$1" --json-output /dev/null "$2" --json >"$3/stdout.json"
            "$1" --quiet --json -o /dev/stderr "$2" >/dev/null 2>"$3/stderr.json"
            stat -c '%F %t,%T' /dev/null
            stat -c '%F' /dev/stderr
            ls /dev""", BINARY, self.model, self.tmp)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.splitlines(), ["character special file 1,3", "symbolic link", "null",
                                                      "stderr", "stdout"])
        self.assertEqual(json.loads((self.tmp / "stdout.json").read_text()), self.document)
        self.assertEqual(json.loads((self.tmp / "stderr.json").read_text()), self.document)

    def test_a_fifo_with_a_reader_receives_the_whole_document(self):
        fifo = self.tmp / "results"
        os.mkfifo(fifo)
        received = []
        reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
        reader.start()
        result = run("--json", "-o", fifo, self.model)
        reader.join(timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(received[0]), self.document)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_a_link_stays_a_link_and_its_target_holds_the_new_document(self):
        kept = self.tmp / "kept"
        kept.mkdir()
        (kept / "report.json").write_text("old")
        (self.tmp / "out").mkdir()
        link = self.tmp / "out" / "report.json"
        link.symlink_to("../kept/report.json")
        result = run("--json-output", link, self.model)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(link.is_symlink())
        self.assertEqual(os.readlink(link), "../kept/report.json")
        self.assertEqual(json.loads((kept / "report.json").read_text()), self.document)
        self.assertEqual([p.name for p in kept.iterdir()], ["report.json"])

    def test_dash_is_standard_output(self):
        for args in (["--json"], [], ["--jsonl"]):
            with self.subTest(args=args):
                result = run(*args, "-o", "-", self.model)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout, run(*args, self.model).stdout)
        self.assertEqual(json.loads(run("--json", "-o", "-", self.model).stdout), self.document)
        self.assertFalse((self.tmp / "-").exists())

    def test_a_folder_is_a_named_error(self):
        result = run("--json-output", self.tmp, self.model)
        self.assertEqual(result.returncode, 3)
        self.assertIn(f"precdetect: {self.tmp}: cannot write: Is a directory", result.stderr)

    def test_a_read_only_folder_is_a_named_error_with_exit_3(self):
        folder = self.tmp / "read-only"
        folder.mkdir()
        target = folder / "r.json"
        if namespace_available():  # root writes into any folder its modes forbid: a read-only mount, privately
            result = in_private_mounts('mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; '
                                       'exec "$2" --json -o "$1/r.json" "$3"', folder, BINARY, self.model)
            reason = "Read-only file system"
        elif not ROOT:
            folder.chmod(0o555)
            result = run("--json", "-o", target, self.model)
            reason = "Permission denied"
        else:
            self.skipTest("root without unshare cannot make a folder it may not write")
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn(f"precdetect: {target}: cannot write: {reason}", result.stderr)
        self.assertEqual(list(folder.iterdir()), [])

    def test_the_cache_is_never_a_device_and_a_link_to_it_stays_a_link(self):
        null = self.null_device()
        result = run("--cache", null, self.model)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"precdetect: cache {null} cannot be opened (not a regular file); scanning without it",
                      result.stderr)
        self.assertNullDevice(null)

        (self.tmp / "caches").mkdir()
        link = self.tmp / "cache.sqlite"
        link.symlink_to(self.tmp / "caches" / "stats.sqlite")
        for _ in range(2):  # created, then read back
            result = run("--json", "--cache", link, self.model)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout), self.document)
        self.assertTrue(link.is_symlink())
        self.assertTrue((self.tmp / "caches" / "stats.sqlite").read_bytes().startswith(b"SQLite format 3\0"))


if __name__ == "__main__":
    unittest.main()
