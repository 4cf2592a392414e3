# Two entry points: `make release` builds the demo release end to end, `make test` runs the tests.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: release test test-units lint bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test]'
	# The COCO panoptic API, the reference of the panoptic tests: its metadata pins NumPy < 2, which
	# its code does not need (tests/test_panoptic.py runs it on ours), so it comes without its deps.
	$(BIN)/pip install --quiet --no-deps panopticapi-lite==0.2.0
	# TIDE's reference code, for tests/test_tide.py: it asks for opencv-python (the GUI build) for its
	# plots; the headless build and seaborn give it what its import needs.
	$(BIN)/pip install --quiet -c constraints.txt opencv-python-headless==4.13.0.92 seaborn==0.13.2 appdirs==1.4.4
	$(BIN)/pip install --quiet --no-deps tidecv==1.0.1
	# LVIS's reference evaluation, for tests/test_lvis.py: its metadata asks for the GUI OpenCV build;
	# it needs what the lines above installed.
	$(BIN)/pip install --quiet --no-deps lvis==0.5.3
	# cityscapesScripts, the reference of the Cityscapes protocol (tests/workflow/test_protocols.py): its
	# metadata asks for the `typing` backport and its tools' dependencies; its evaluation imports
	# pyquaternion only.
	$(BIN)/pip install --quiet --no-deps cityscapesscripts==2.3.0 pyquaternion==0.9.9
	touch $(STAMP)

release: $(STAMP)
	$(BIN)/regionbench build --cores 2

# On every core (pytest-xdist); a test module stays on one worker, so its fixtures are made once.
test: $(STAMP)
	$(BIN)/pytest -q -n auto --dist loadfile --ignore=tests/lint

# The fast lane: every test but the Snakemake builds and the SLURM cluster (a few minutes).
test-units: $(STAMP)
	$(BIN)/pytest -q -n auto --dist loadfile --ignore=tests/lint -m "not workflow and not slurm"

# Paper scale: generate (once) and build the full collection, print the per-stage table.
bench: $(STAMP)
	$(BIN)/python benchmarks/paper_scale.py

lint: $(STAMP)
	$(BIN)/ruff check src scripts tests benchmarks
	$(BIN)/ruff format --check src scripts tests benchmarks
	$(BIN)/snakefmt --check Snakefile rules
	$(BIN)/mypy
	# The type checker holding a layout to its contract (tests/lint): a check of the lint lane.
	$(BIN)/pytest -q tests/lint

clean:
	rm -rf results resources logs .snakemake
