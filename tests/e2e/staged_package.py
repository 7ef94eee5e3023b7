"""The precdetect package as the Python tests import it: python/precdetect staged in a scratch folder with the
built extension (PRECDETECT_CORE) beside it, first on sys.path; the folder is removed at exit."""

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
shutil.copy(os.environ["PRECDETECT_CORE"], STAGE / "precdetect")
sys.path.insert(0, str(STAGE))
