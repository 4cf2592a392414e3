# Two entry points: `make release` builds the demo release end to end, `make test` runs the tests.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# uv installs the pinned set about ten times faster than pip (measured in docs/performance.md).
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python -c constraints.txt
# What building and using a release needs (`make release`), then the tests' tools and the
# reference implementations our figures are checked against (`make test`, `make lint`).
# Bytecode compiled at install: many machines (CI's, Docker images) set PYTHONDONTWRITEBYTECODE=1,
# and then every process would compile Snakemake, pandas and scikit-learn again (about 6 CPU-s a
# process, measured in docs/performance.md). Incremental: a second run compiles only what changed.
# SAM 3's package is left out: the tests load one file of it by its path, never the package.
COMPILE := $(BIN)/python -m compileall -q -j 0 -x '/tests?/|/sam3/' src
STAMP := $(VENV)/.installed-build
TEST_STAMP := $(VENV)/.installed-test

.PHONY: test-machinery release test test-units lint bench clean

$(BIN)/uv: constraints.txt
	@echo "make: the virtual environment $(VENV), with uv (the installer)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --quiet --disable-pip-version-check -c constraints.txt uv
	@touch $@

$(STAMP): pyproject.toml constraints.txt Makefile $(BIN)/uv
	@echo "make: installing regionbench[build], pinned by constraints.txt"
	@$(UV) -e '.[build]'
	@$(COMPILE) "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	@touch $@

$(TEST_STAMP): $(STAMP)
	@echo "make: installing regionbench[test] and the reference implementations"
	@$(UV) -e '.[test]'
	@# The COCO panoptic API, the reference of the panoptic tests: its metadata pins NumPy < 2, which
	@# its code does not need (tests/test_panoptic.py runs it on ours), so it comes without its deps.
	@# TIDE's reference code (tests/test_tide.py) asks for opencv-python (the GUI build) for its plots:
	@# the headless build and seaborn give it what its import needs. LVIS's reference evaluation
	@# (tests/test_lvis.py) asks for the GUI OpenCV build too. cityscapesScripts, the reference of
	@# the Cityscapes protocol (tests/workflow/test_protocols.py), asks for the `typing` backport and
	@# its tools' dependencies; its evaluation imports pyquaternion only. SAM 3's cgF1 evaluator, the
	@# reference of the concept measure (tests/test_concept_f1.py), is one file of the sam3 package,
	@# which imports numpy, pycocotools, scipy and tqdm: the package's own dependencies (the model) stay out.
	@$(UV) opencv-python-headless seaborn appdirs
	@$(UV) --no-deps panopticapi-lite tidecv lvis cityscapesscripts pyquaternion sam3
	@$(COMPILE) "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	@touch $@

release: $(STAMP)
	$(BIN)/regionbench build --cores 2

# On every core (pytest-xdist); a test module stays on one worker, so its fixtures are made once.
# Every behaviour; the machinery around a build has its own lane, test-machinery (CI runs both).
test: $(TEST_STAMP)
	$(BIN)/pytest -q -n auto --dist loadfile --ignore=tests/lint -m "not machinery and not slurm"

# DVC flows and fresh clones of tags, stop signals, a machine at fault, the wheel, scoring as jobs
# and on the SLURM test cluster (when it is up: tests/slurm/cluster.sh).
test-machinery: $(TEST_STAMP)
	$(BIN)/pytest -q -n auto --dist loadfile --ignore=tests/lint -m "machinery or slurm"

# The fast lane: every test but the Snakemake builds and the SLURM cluster (a few minutes).
test-units: $(TEST_STAMP)
	$(BIN)/pytest -q -n auto --dist loadfile --ignore=tests/lint -m "not workflow and not slurm"

# Paper scale: generate (once) and build the full collection, print the per-stage table.
bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/paper_scale.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check src scripts tests benchmarks
	$(BIN)/ruff format --check src scripts tests benchmarks
	$(BIN)/snakefmt --check Snakefile rules src/regionbench/data/scoring/Snakefile
	$(BIN)/mypy
	# The type checker holding a layout to its contract (tests/lint): a check of the lint lane.
	$(BIN)/pytest -q tests/lint

clean:
	rm -rf results resources logs .snakemake
