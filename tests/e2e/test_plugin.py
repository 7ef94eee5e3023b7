"""The program links no libtorch; the CUDA plugin (libprecdetect_cuda.so) is loaded only when a GPU is asked for,
with the torch that PRECDETECT_LIBTORCH names, and a torch it does not fit is one line and exit 3 (issue 47).

The torches that do not fit are folders made here: a torch package's layout (version.py, lib/) with another
release's version, or with a lib/libtorch_cuda.so that is no library."""

import json
import subprocess
import unittest
from pathlib import Path

import torch
from safetensors.torch import save_file

from helpers import BINARY, ScanTestCase, in_private_mounts, namespace_available, run, scan

BUILD = Path(BINARY).parent
PLUGIN = BUILD / "libprecdetect_cuda.so"
TORCH = Path(torch.__file__).parent


def needed(path):
    """The DT_NEEDED entries of an ELF file, as readelf lists them."""
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]


def fake_torch(folder, version, cuda_library=b""):
    """A folder laid out as a torch package, of `version`, whose lib/libtorch_cuda.so holds `cuda_library`."""
    (folder / "lib").mkdir(parents=True)
    (folder / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'unknown'\n")
    (folder / "lib" / "libtorch_cuda.so").write_bytes(cuda_library)
    return folder


class Linking(unittest.TestCase):
    def test_the_program_and_the_hdf5_helper_link_no_libtorch(self):
        for program in (BINARY, BUILD / "precdetect-hdf5"):
            libraries = needed(program)
            self.assertIn("libc.so.6", libraries)  # the listing was read
            self.assertEqual([name for name in libraries if "torch" in name or "c10" in name], [], program)

    def test_the_plugin_links_libtorch(self):
        libraries = needed(PLUGIN)
        self.assertIn("libtorch_cpu.so", libraries)
        self.assertIn("libc10.so", libraries)


class Loading(ScanTestCase):
    def setUp(self):
        super().setUp()
        self.model = self.tmp / "m.safetensors"
        save_file({"w": torch.randn(8, 8).to(torch.bfloat16)}, self.model)
        code, self.cpu_document, _ = scan("--device", "cpu", self.model)
        self.assertEqual(code, 0)

    def cuda_with(self, torch_folder):
        return run("--device", "cuda", self.model, env={"PRECDETECT_LIBTORCH": str(torch_folder)})

    def assertOneLine(self, result, *fragments):
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertTrue(result.stderr.startswith("precdetect: --device cuda: "), result.stderr)
        for fragment in fragments:
            self.assertIn(fragment, result.stderr)
        self.assertEqual(result.stdout, "")

    def test_a_cpu_scan_runs_without_any_torch_on_the_library_path(self):
        env = {"PRECDETECT_LIBTORCH": "/nonexistent", "LD_LIBRARY_PATH": ""}
        code, document, stderr = scan("--device", "cpu", self.model, env=env)
        self.assertEqual((code, stderr), (0, ""))
        self.assertEqual(document, self.cpu_document)

    def test_another_torch_release_is_one_line_naming_both(self):
        other = fake_torch(self.tmp / "torch-2.9", "2.9.1+cu128")
        series = ".".join(torch.__version__.split(".")[:2])
        self.assertOneLine(self.cuda_with(other), f"runs with torch {series}.*", f"holds torch 2.9.1+cu128", str(other))

    def test_a_folder_that_is_no_torch_is_one_line(self):
        (self.tmp / "empty").mkdir()
        self.assertOneLine(self.cuda_with(self.tmp / "empty"), "is not a torch package or libtorch folder")

    def test_a_torch_without_cuda_is_one_line(self):
        folder = fake_torch(self.tmp / "cpu-torch", torch.__version__)
        (folder / "lib" / "libtorch_cuda.so").unlink()
        self.assertOneLine(self.cuda_with(folder), "has no CUDA support")

    def test_a_library_the_dynamic_linker_refuses_is_one_line_of_ours(self):
        folder = fake_torch(self.tmp / "broken", torch.__version__, b"not an ELF file\n" * 64)
        self.assertOneLine(self.cuda_with(folder), f"torch {torch.__version__} at {folder} cannot be loaded (",
                           "libtorch_cuda.so")

    @unittest.skipIf(torch.cuda.is_available(), "a GPU is present")
    def test_the_plugin_loads_with_the_build_torch_and_finds_no_gpu(self):
        result = self.cuda_with(TORCH)
        self.assertOneLine(result, "no CUDA device is available")

    @unittest.skipUnless(namespace_available(), "needs root and unshare (a private mount namespace)")
    def test_auto_with_a_gpu_driver_but_no_fitting_torch_warns_and_scans_on_the_cpu(self):
        # A GPU driver's node, in a /dev of the namespace's own: --device auto then tries the plugin.
        other = fake_torch(self.tmp / "torch-2.9", "2.9.1")
        result = in_private_mounts("""
            mount -t tmpfs tmpfs /dev
            mknod -m 666 /dev/null c 1 3
            touch /dev/nvidiactl
            PRECDETECT_LIBTORCH="$3" "$1" --json --device auto "$2" >"$4/auto.json" """,
                                   BINARY, self.model, other, self.tmp)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr.splitlines(), [
            f"precdetect: warning: --device auto: the CUDA plugin runs with torch "
            f"{'.'.join(torch.__version__.split('.')[:2])}.*, and {other} holds torch 2.9.1; scanning on the CPU"])
        with open(self.tmp / "auto.json") as document:
            self.assertEqual(json.load(document)["models"], self.cpu_document["models"])


if __name__ == "__main__":
    unittest.main()
