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

# one worker per core: iree-compile, most of the suite's time, runs on one core
test: $(STAMP)
	$(PY) -m pytest -n auto --dist worksteal

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/transforms.py

lint: $(STAMP)
	$(VENV)/bin/ruff check funcgrad tests benchmarks examples

clean:
	rm -rf $(VENV) build *.egg-info
