"""``python -m progress_sql`` is the ``progress-sql`` command (for environments where the package is on
``PYTHONPATH`` rather than installed, such as the side environments of scripts/side_venv.sh)."""

from progress_sql.cli import main

if __name__ == "__main__":
    main()
