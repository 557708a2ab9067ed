"""Benchmark-only (bench/real_repos_run.py): stands in for third-party packages that a fetched
repository's package imports but this machine lacks, named in KBOT_BENCH_STUBS (comma
separated). The benchmark names only packages without which the *original* module does not
import, and reports them beside the result. A stub module hands out stub classes for any name:
they can be subclassed, called, used as decorators and read for attributes, enough for an
import chain (`from transformers import AutoConfig`, `class Config(PretrainedConfig)`) that the
patched op never uses."""

import importlib.abc
import importlib.machinery
import os
import sys
import types

STUBBED = tuple(n for n in os.environ.get("KBOT_BENCH_STUBS", "").split(",") if n)


class _StubType(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StubType(name, (), {})

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # a decorator: the function stays as written
        return super().__call__()


class _StubModule(types.ModuleType):
    __path__: list = []  # a package, so that submodules import too

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StubType(name, (), {"__module__": self.__name__})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == n or fullname.startswith(n + ".") for n in STUBBED):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


if STUBBED:
    sys.meta_path.insert(0, _Finder())
