# Two entry points: `make demo` (the whole workflow on the demo data) and `make test`.
# Both create .venv with Python >= 3.11 first if it is not there.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DB ?= demo.db

.PHONY: demo test docs lint bench clean

$(BIN)/.installed: pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	rm -rf $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm demo_report
	$(BIN)/annotate import data/demo --db $(DEMO_DB)
	$(BIN)/annotate sample --n 120 --seed 7 --name main --stratify condition --db $(DEMO_DB)
	$(BIN)/annotate import-labels data/demo_labels.csv --codebook traum --db $(DEMO_DB)
	$(BIN)/annotate agree --codebook traum --db $(DEMO_DB)
	$(BIN)/annotate adjudicate --codebook traum --majority-only --db $(DEMO_DB)
	$(BIN)/annotate import-labels data/demo_self_reports.jsonl --codebook mental_model --mapping data/demo_self_report_mapping.yaml --db $(DEMO_DB)
	$(BIN)/annotate report --codebook traum --out demo_report --db $(DEMO_DB)
	$(BIN)/annotate status --db $(DEMO_DB)
	$(BIN)/annotate import data/demo_self/log --db $(DEMO_DB)
	@echo "Annotate your own actions (docs/tutorials/self-annotation.md): annotate code --codebook mental_model_self --self Rosa --db $(DEMO_DB) --media-prefix s3://demo-bucket/annotation/=data/demo_self/screens"

test: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# The documentation site, from mkdocs.yml and docs/, into site/ (warnings are errors;
# tests/test_docs.py builds it too, so make test fails on a broken link).
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache $(DEMO_DB)* demo_report site
