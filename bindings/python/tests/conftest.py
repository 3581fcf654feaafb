import os
import sys
from pathlib import Path

# Import the package from this checkout (not an installed copy).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[3]
MODELS = Path(os.environ.get("LEAP_MODELS_DIR", REPO / "models"))
FIXTURES = REPO / "Tests" / "Fixtures"
