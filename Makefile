# funcgrad developer commands. Each target sets up .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,lint,data,export,distributed]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) examples/train_digits.py

# one worker per core (at most 4: each may hold an iree-compile of a few GiB):
# iree-compile, most of the suite's time, runs on one core
WORKERS ?= $(shell $(PYTHON) -c "import os; f = getattr(os, 'sched_getaffinity', None); \
	print(max(1, min(4, len(f(0)) if f else os.cpu_count() or 1)))")

test: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) --dist worksteal --durations=30

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/transforms.py

lint: $(STAMP)
	$(VENV)/bin/ruff check funcgrad tests benchmarks examples

clean:
	rm -rf $(VENV) build *.egg-info
