"""Console entry point: the library's commands plus the ones that run Prefect flows (`run`, `serve`)."""

from __future__ import annotations

from pipeline.cli import app


def _register_flow_commands() -> None:
    import importlib
    import importlib.util

    for mod in ("flows.commands",):
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod).register(app)


_register_flow_commands()


def main() -> None:
    from pipeline.executor import RayUnreachable

    try:
        app()
    except RayUnreachable as e:  # a configuration problem: one line, not a traceback
        import sys

        print(f"opforge: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
