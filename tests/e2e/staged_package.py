"""The precdetect package as the Python tests import it: python/precdetect staged in a scratch folder with the
built C interface (PRECDETECT_API) in its bin/, first on sys.path; the folder is removed at exit."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

from helpers import REPO

STAGE = Path(tempfile.mkdtemp(prefix="precdetect-python-"))
atexit.register(shutil.rmtree, STAGE, ignore_errors=True)
shutil.copytree(REPO / "python" / "precdetect", STAGE / "precdetect")
(STAGE / "precdetect" / "bin").mkdir()
shutil.copy(os.environ["PRECDETECT_API"], STAGE / "precdetect" / "bin")
sys.path.insert(0, str(STAGE))
