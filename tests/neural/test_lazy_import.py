"""``import dpopt`` (and every layer that does not train networks) never imports torch."""

import subprocess
import sys


def test_import_dpopt_does_not_import_torch():
    code = (
        "import sys, dpopt, dpopt.privacy, dpopt.privacy.torch_noise, dpopt.linesearch.algorithms, "
        "dpopt.accelerated, dpopt.estimators, dpopt.cli, dpopt.experiments\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
