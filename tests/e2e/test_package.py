"""Installing precdetect the ways README gives them (issue 37): `cmake --install`, the wheel into a fresh virtual
environment that holds only torch, `pip install` of the source tree with pip's defaults, and the pre-commit hook
run by the real pre-commit. The installed program must be the same program: its JSON is compared with the build's.

Run by ctest as `package.wheel` (CmakeInstall, Wheel) and `package.pre_commit` (PreCommit): each builds the
program again (its objects from the Release build's compiler cache: CACHED_BUILD) and installs torch into fresh
environments, minutes each (docs/benchmarks.md gives the figures). PRECDETECT_BUILD_DIR names the build folder
`cmake --install` installs from.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import h5py
import numpy as np
import torch
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from safetensors.torch import save_file

from helpers import BINARY, REPO

BUILD_DIR = Path(os.environ.get("PRECDETECT_BUILD_DIR", REPO / "build"))
EXAMPLES = [str(REPO / "examples" / "fp16-like"), str(REPO / "examples" / "bf16-like")]
TORCH_REQUIREMENT = ("-r", str(REPO / "requirements.txt"))  # torch, as README's first command installs it
# The libraries a manylinux wheel may take from the system (auditwheel's policy), and torch's own, which the
# installed torch package provides.
BASE_LIBRARIES = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libstdc++.so.6", "libpthread.so.0", "libdl.so.2",
                  "librt.so.1", "libresolv.so.2", "libz.so.1", "ld-linux-x86-64.so.2"}
TORCH_LIBRARIES = {"libtorch_cpu.so", "libc10.so"}  # the CUDA plugin's alone
# The wheel's and pip's builds compile the sources scripts/build.sh's Release build compiled (the same compiler and
# flags): through ccache, as that build does, without precompiled headers, in a build folder one level under the
# source tree as build/ is, paths under the tree hashed relative to it. They take that build's objects from the cache
# rather than compiling the project twice more (minutes in CI: docs/benchmarks.md); CMake still configures and
# ninja still runs every compile and link, from the source pip was given.
# CXX: the compiler by the name that build used (ccache hashes the name: c++ and g++ are two keys), where
# scikit-build-core would otherwise name Python's (sysconfig's CXX).
CACHED_BUILD = {"CCACHE_BASEDIR": str(REPO), "CXX": "c++", "SKBUILD_CMAKE_DEFINE":
                "CMAKE_CXX_COMPILER_LAUNCHER=ccache;CMAKE_C_COMPILER_LAUNCHER=ccache;CMAKE_DISABLE_PRECOMPILE_HEADERS=ON"}


def command(*args, env=None, cwd=None, timeout=1200):
    """Runs a command; returns the CompletedProcess with text output."""
    return subprocess.run([*map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def checked(*args, **kwargs):
    result = command(*args, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def make_venv(folder, *requirements):
    """A fresh virtual environment at `folder`, with pip's defaults installing `requirements` into it."""
    checked("python3", "-m", "venv", folder)
    if requirements:
        checked(Path(folder) / "bin" / "python", "-m", "pip", "install", "-q", *requirements)
    return Path(folder)


def scan_json(program, *args, cwd):
    """(exit code, document) of `program --json ARGS` run in `cwd`."""
    result = command(*program, "--json", *args, cwd=cwd)
    return result.returncode, json.loads(result.stdout)


def write_hdf5(path):
    """A Keras-style weights file, read through the precdetect-hdf5 helper beside the program."""
    with h5py.File(path, "w") as f:
        f.create_dataset("dense/kernel:0", data=np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8))
    return path


def needed_libraries(path):
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return {tag.needed for section in elf.iter_sections() if isinstance(section, DynamicSection)
                for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"}


def run_paths(path):
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return [getattr(tag, "rpath", None) or tag.runpath for section in elf.iter_sections()
                if isinstance(section, DynamicSection) for tag in section.iter_tags()
                if tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH")]


class InstalledProgramTestCase(unittest.TestCase):
    """Checks that an installed program answers as the build's program does."""

    def assert_same_as_build(self, program, cwd):
        build = scan_json([BINARY], *EXAMPLES, cwd=cwd)
        installed = scan_json(program, *EXAMPLES, cwd=cwd)
        self.assertEqual(installed, build)
        self.assertEqual(build[0], 0)
        self.assertEqual(len(build[1]["models"]), 2)
        for gate in (["--fail-if-fp16-risk"], ["--bogus-flag"], [str(Path(cwd) / "missing.safetensors")]):
            self.assertEqual(command(*program, *gate, *EXAMPLES, cwd=cwd).returncode,
                             command(BINARY, *gate, *EXAMPLES, cwd=cwd).returncode, gate)

    def assert_reads_hdf5(self, program, folder):
        code, document = scan_json(program, write_hdf5(Path(folder) / "tf_model.h5"), cwd=folder)
        self.assertEqual(code, 0, document)
        [model] = document["models"]
        self.assertEqual(model["format"], "hdf5")
        self.assertEqual(model["summary"]["abs_max"], 2.0)


class CmakeInstall(InstalledProgramTestCase):
    def test_installed_program_runs_from_any_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            prefix = Path(tmp) / "prefix"
            checked("cmake", "--install", BUILD_DIR, "--prefix", prefix)
            self.assertEqual(sorted(p.name for p in (prefix / "bin").iterdir()),
                             ["libprecdetect_cuda.so", "precdetect", "precdetect-hdf5"])
            elsewhere = Path(tmp) / "elsewhere"
            elsewhere.mkdir()
            self.assert_same_as_build([prefix / "bin" / "precdetect"], elsewhere)
            self.assert_reads_hdf5([prefix / "bin" / "precdetect"], elsewhere)


class Wheel(InstalledProgramTestCase):
    """scripts/build_wheel.sh's wheel, installed into environments that hold only torch (one made with pip's
    defaults, then copied by hard links for each test: pip writes no torch file)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-wheel-", dir=BUILD_DIR))
        cls.torch_only = make_venv(cls.tmp / "torch-only", *TORCH_REQUIREMENT)
        checked(REPO / "scripts" / "build_wheel.sh", cwd=REPO, env=dict(os.environ, **CACHED_BUILD))
        [cls.wheel] = (REPO / "dist").glob("precdetect-*-py3-none-manylinux_*_x86_64.whl")  # any CPython 3

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy_of_torch_only(self, name):
        checked("cp", "-al", self.torch_only, self.tmp / name)
        return self.tmp / name

    def test_auditwheel_names_no_external_library_but_the_base_ones(self):
        show = checked(REPO / ".venv" / "bin" / "auditwheel", "show", self.wheel).stdout
        self.assertIn("system-provided shared libraries", show)
        named = {word.strip(",") for word in show.split() if ".so" in word}
        vendored = {name for name in named if "-" in name.split(".so")[0]}  # libfoo-<hash>.so.N: inside the wheel
        self.assertLessEqual(named - vendored, BASE_LIBRARIES, show)
        # -v goes on to list what the wheel needs from outside it: torch's libraries alone.
        verbose = checked(REPO / ".venv" / "bin" / "auditwheel", "-v", "show", self.wheel).stdout
        external = verbose.split("The following external shared libraries are required by the wheel:\n")[1]
        self.assertEqual(set(json.JSONDecoder().raw_decode(external)[0]), TORCH_LIBRARIES, verbose)

    def test_every_library_is_vendored_torchs_or_the_systems_base(self):
        unpacked = self.tmp / "unpacked"
        shutil.unpack_archive(self.wheel, unpacked, "zip")
        vendored = {p.name for p in (unpacked / "precdetect.libs").iterdir()}
        programs = [unpacked / "precdetect" / "bin" / name
                    for name in ("precdetect", "precdetect-hdf5", "libprecdetect_api.so")]
        plugin = unpacked / "precdetect" / "bin" / "libprecdetect_cuda.so"
        self.assertEqual(list((unpacked / "precdetect").glob("*.so")), [])  # no CPython extension
        for elf in programs + [plugin] + [unpacked / "precdetect.libs" / name for name in vendored]:
            self.assertLessEqual(needed_libraries(elf), vendored | BASE_LIBRARIES | TORCH_LIBRARIES, elf)
            for entry in run_paths(elf):
                self.assertTrue(all(p.startswith("$ORIGIN") for p in entry.split(":") if p), f"{elf}: {entry}")
        for program in programs:  # torch-free: the plugin alone links libtorch, found by the program at run time
            self.assertEqual(needed_libraries(program) & TORCH_LIBRARIES, set(), program)
        self.assertLessEqual(TORCH_LIBRARIES, needed_libraries(plugin))

    def test_wheel_installs_beside_torch_and_runs_the_same_program(self):
        venv = self.copy_of_torch_only("wheel")
        checked(venv / "bin" / "python", "-m", "pip", "install", "-q", self.wheel)
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        for program in ([venv / "bin" / "precdetect"], [venv / "bin" / "python", "-m", "precdetect"]):
            self.assert_same_as_build(program, elsewhere)
            self.assert_reads_hdf5(program, elsewhere)
        api = checked(venv / "bin" / "python", "-c", "import json, sys, precdetect; "
                      "print(json.dumps([r.to_dict() for r in precdetect.scan(*sys.argv[1:])]))", *EXAMPLES,
                      cwd=elsewhere)
        self.assertEqual(json.loads(api.stdout), scan_json([BINARY], *EXAMPLES, cwd=elsewhere)[1]["models"])
        hdf5 = checked(venv / "bin" / "python", "-c", "import os, sys, precdetect; [r] = precdetect.scan(sys.argv[1]); "
                       "print(r.to_dict()['format'], r.summary['abs_max'], os.environ['PRECDETECT_HELPERS'])",
                       write_hdf5(elsewhere / "api.h5"), cwd=elsewhere)
        site_packages = next((venv / "lib").glob("python3*/site-packages"))
        # the package's own helper, which the binding names (the build folder it was compiled in exists only here)
        self.assertEqual(hdf5.stdout, f"hdf5 2.0 {site_packages / 'precdetect' / 'bin'}\n")
        live = checked(venv / "bin" / "python", "-c", "import torch, precdetect; "
                       "print(precdetect.check({'w': torch.full((4, 4), 300.0)}).fp16_risk)", cwd=elsewhere)
        self.assertEqual(live.stdout, "True\n")  # torch's tensors reach the C interface through DLPack

    def test_another_torch_runs_the_cpu_path_and_says_in_one_line_why_not_cuda(self):
        venv = self.copy_of_torch_only("mismatch")
        checked(venv / "bin" / "python", "-m", "pip", "install", "-q", self.wheel)
        # A torch 2.10.0 package's layout, found before the installed one (the launcher only locates it, and the
        # program reads its version.py: installing a second real torch would cost 4 GB for the same check).
        fake = self.tmp / "fake-torch"
        (fake / "torch" / "lib").mkdir(parents=True)
        (fake / "torch" / "__init__.py").write_text("raise ImportError('never imported')\n")
        (fake / "torch" / "version.py").write_text("__version__ = '2.10.0+cu128'\n")
        env = dict(os.environ, PYTHONPATH=str(fake))
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        cpu = command(venv / "bin" / "precdetect", "--json", *EXAMPLES, env=env, cwd=elsewhere)
        self.assertEqual((cpu.returncode, cpu.stderr), (0, ""))
        self.assertEqual(json.loads(cpu.stdout), scan_json([BINARY], *EXAMPLES, cwd=elsewhere)[1])
        result = command(venv / "bin" / "precdetect", "--device", "cuda", *EXAMPLES, env=env)
        self.assertEqual(result.returncode, 3)
        self.assertEqual(result.stdout, "")
        [line] = result.stderr.splitlines()
        self.assertEqual(line, f"precdetect: --device cuda: the CUDA plugin runs with torch 2.11.*, and "
                               f"{fake / 'torch'} holds torch 2.10.0+cu128")

    def test_without_torch_the_program_and_the_python_api_run_as_the_build_does(self):
        venv = make_venv(self.tmp / "no-torch", str(self.wheel))  # pip's defaults: nothing but precdetect
        self.assertEqual(command(venv / "bin" / "python", "-c", "import torch").returncode, 1)
        elsewhere = self.tmp / "no-torch-elsewhere"
        elsewhere.mkdir()
        for program in ([venv / "bin" / "precdetect"], [venv / "bin" / "python", "-m", "precdetect"]):
            self.assert_same_as_build(program, elsewhere)
        api = checked(venv / "bin" / "python", "-c", "import json, sys, precdetect; "
                      "print(json.dumps([[r.to_dict() for r in precdetect.scan(*sys.argv[1:])], "
                      "[p.to_dict() for p in precdetect.diff(*sys.argv[1:])]]))", *EXAMPLES, cwd=elsewhere)
        scanned, diffed = json.loads(api.stdout)
        self.assertEqual(scanned, scan_json([BINARY], *EXAMPLES, cwd=elsewhere)[1]["models"])
        by_program = json.loads(checked(BINARY, "diff", "--json", *EXAMPLES, cwd=elsewhere).stdout)["pairs"]
        self.assertEqual(diffed, by_program)
        result = command(venv / "bin" / "precdetect", "--device", "cuda", *EXAMPLES, cwd=elsewhere,
                         env={k: v for k, v in os.environ.items() if k != "PRECDETECT_LIBTORCH"})
        self.assertEqual(result.returncode, 3)
        [line] = result.stderr.splitlines()
        self.assertEqual(line, "precdetect: --device cuda: no torch to run CUDA with: set PRECDETECT_LIBTORCH to a "
                               "torch package or libtorch folder")

    def test_installing_beside_another_torch_release_leaves_it_as_it_was(self):
        venv = make_venv(self.tmp / "torch-2.10")
        site = next((venv / "lib").glob("python3*/site-packages"))
        info = site / "torch-2.10.0.dist-info"  # torch 2.10.0 as pip sees it (its metadata; 4 GB spared)
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n")
        (info / "RECORD").write_text("")
        (info / "INSTALLER").write_text("pip\n")
        report = self.tmp / "dry-run.json"
        checked(venv / "bin" / "python", "-m", "pip", "install", "-q", "--dry-run", "--report", report, self.wheel)
        self.assertEqual([item["metadata"]["name"] for item in json.loads(report.read_text())["install"]],
                         ["precdetect"])
        checked(venv / "bin" / "python", "-m", "pip", "install", "-q", self.wheel)
        listed = checked(venv / "bin" / "python", "-m", "pip", "list", "--format", "json").stdout
        self.assertIn({"name": "torch", "version": "2.10.0"}, json.loads(listed))
        self.assertEqual([p.name for p in site.glob("torch*")], ["torch-2.10.0.dist-info"])


class Unpicklable:
    """A pickle that would run `true` through os.system when loaded: precdetect must name the global."""

    def __reduce__(self):
        return os.system, ("true",)


class PreCommit(InstalledProgramTestCase):
    """The hook of .pre-commit-hooks.yaml through the real pre-commit, in a scratch git repository.

    The scratch repository's config names this repository at HEAD, as `pre-commit try-repo` would generate it, and
    adds a second use of the hook with args. pre-commit makes the hook's environment as it does for a user: a
    fresh virtualenv, then `pip install .` of its clone of this repository with pip's defaults (an isolated build
    environment with scikit-build-core alone, the whole build, its compiles through ccache; no torch anywhere:
    issue 47). That environment is
    also README's from-source install, checked here against the build's program. try-repo itself
    is not run: it builds in a store it deletes, so each call would compile precdetect again (6.5 min in CI).
    """

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="precdetect-pre-commit-", dir=BUILD_DIR))
        cls.scratch = cls.tmp / "scratch"
        cls.scratch.mkdir()
        checked("git", "init", "-q", cwd=cls.scratch)
        with open(cls.scratch / "unsafe.pkl", "wb") as f:
            pickle.dump({"weights": Unpicklable()}, f)
        save_file({"w": torch.full((64, 64), 300.0, dtype=torch.bfloat16)}, cls.scratch / "bf16_range.safetensors")
        save_file({"w": torch.linspace(-1, 1, 4096, dtype=torch.float16).reshape(64, 64)},
                  cls.scratch / "fp16_range.safetensors")
        (cls.scratch / "notes.txt").write_text("not a checkpoint: the hook never sees it\n")
        checked("git", "add", ".", cwd=cls.scratch)
        # PRE_COMMIT_HOME lies under the build folder, hence its clone under CCACHE_BASEDIR; pip builds in the clone's
        # build/ (scripts/build_wheel.sh names its own folder, which this variable would override).
        cls.env = dict(os.environ, PRE_COMMIT_HOME=str(cls.tmp / "home"), PRE_COMMIT_COLOR="never",
                       SKBUILD_BUILD_DIR="build", **CACHED_BUILD)
        cls.pre_commit = REPO / ".venv" / "bin" / "pre-commit"
        head = checked("git", "rev-parse", "HEAD", cwd=REPO).stdout.strip()
        (cls.scratch / ".pre-commit-config.yaml").write_text(json.dumps({"repos": [{"repo": str(REPO), "rev": head, "hooks": [
            {"id": "precdetect", "alias": "defaults"},
            {"id": "precdetect", "alias": "fp16-gate", "args": ["--fail-if-fp16-risk"]}]}]}))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def pre_commit_run(self, *args):
        return command(self.pre_commit, *args, env=self.env, cwd=self.scratch)

    def test_an_unsafe_pickle_fails_the_commit_naming_its_global(self):
        result = self.pre_commit_run("run", "defaults", "--files", "unsafe.pkl", "fp16_range.safetensors")
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertRegex(result.stdout, r"precdetect\.+Failed")
        self.assertIn("unsafe_pickle", result.stdout)
        self.assertIn("posix.system", result.stdout)  # os.system, as pickle records it on Linux
        self.assertRegex(result.stdout, r"fp16_range\.safetensors +\|.*\| fp16\|fp32")  # scanned, and no gate failed

    def test_config_gates_on_fp16_risk_through_args(self):
        risky = self.pre_commit_run("run", "fp16-gate", "--files", "bf16_range.safetensors")
        self.assertEqual(risky.returncode, 1, risky.stdout + risky.stderr)
        self.assertRegex(risky.stdout, r"precdetect\.+Failed")
        self.assertIn("fp16-risk", risky.stdout)
        safe = self.pre_commit_run("run", "fp16-gate", "--files", "fp16_range.safetensors")
        self.assertEqual(safe.returncode, 0, safe.stdout + safe.stderr)
        self.assertRegex(safe.stdout, r"precdetect\.+Passed")
        # Without the gate's args, the default hook lets the bf16-range file through: the gate is the args'.
        default = self.pre_commit_run("run", "defaults", "--files", "bf16_range.safetensors")
        self.assertEqual(default.returncode, 0, default.stdout + default.stderr)

    def test_hook_environment_is_a_source_install_of_the_same_program(self):
        self.pre_commit_run("run", "defaults", "--files", "fp16_range.safetensors")  # makes the environment
        [venv] = (self.tmp / "home").glob("repo*/py_env-*")
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir(exist_ok=True)
        for program in ([venv / "bin" / "precdetect"], [venv / "bin" / "python", "-m", "precdetect"]):
            self.assert_same_as_build(program, elsewhere)
        self.assertEqual(command(venv / "bin" / "python", "-c", "import torch").returncode, 1)  # never installed
        self.assertEqual(list(venv.glob("lib/python3*/site-packages/precdetect/bin/*cuda*")), [])  # built torch-free

    def test_only_checkpoint_files_reach_the_hook(self):
        result = self.pre_commit_run("run", "defaults", "--files", "notes.txt")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertRegex(result.stdout, r"precdetect\.+\(no files to check\)Skipped")


if __name__ == "__main__":
    unittest.main()
