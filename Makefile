# `make demo` and `make test` work on a machine that has only python3: scripts/bootstrap.sh
# fetches uv from PyPI when it is missing (falling back to pip), never downloads a Python, syncs
# the locked workspace, then runs the command inside it.
export UV_PYTHON_DOWNLOADS := never
RUN := scripts/bootstrap.sh

.PHONY: demo test lint bench docs

demo:
	$(RUN) python examples/demo.py
	$(RUN) noetic run examples/batch.json

test:
	$(RUN) pytest

lint:
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) mypy packages

bench:
	$(RUN) python bench/run.py

# The documentation site from docs/ into site/ (offline; warnings, dead links included, fail it).
docs:
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict
