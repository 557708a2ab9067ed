"""How the PR's parity test and benchmark carry the reference: imports in isort order, and the
shape sweep's sizes as keywords of the input builders (kbot.publish.reference)."""


def test_the_prs_imports_are_in_isort_order():
    """The parity test and the benchmark merge kbot's imports with the reference's: written in
    the order ruff's `I` rules and isort's default profile want, so no import check flags them."""
    from kbot.publish.reference import import_sections

    lines = [
        "import torch",
        "import argparse",
        "from torch import nn",
        "import types",
        "from demo.layers.triton_norm import rmsnorm",
        "from demo.layers.norm import RMSNorm",
        "import triton",
        "import torch",
    ]
    assert import_sections(lines, "demo") == [
        ["import argparse", "import types"],
        ["import torch", "import triton", "from torch import nn"],
        ["from demo.layers.norm import RMSNorm", "from demo.layers.triton_norm import rmsnorm"],
    ]


def test_swept_sizes_become_keywords_of_the_input_builders_only():
    from kbot.publish.reference import parametrize_sizes

    body = (
        "WIDTH = 256\nHEADS = 64\n\n\nclass Model:\n    heads = HEADS\n\n\n"
        "def get_inputs(T=1):\n    # one row per token\n    return [torch.randn(T, WIDTH), HEADS]\n\n\n"
        "def get_init_inputs():\n    return [256, 1e-06]\n"
    )
    sized = parametrize_sizes(body, [256, 64])
    assert "def get_inputs(T=1, dim_256=256):" in sized.body
    assert "torch.randn(T, dim_256), HEADS]" in sized.body  # HEADS is Model's too: left alone
    assert "def get_init_inputs(dim_256=256):\n    return [dim_256, 1e-06]" in sized.body
    assert sized.body.startswith("WIDTH = 256\nHEADS = 64\n\n\nclass Model:")  # text kept
    assert (sized.inputs_keys, sized.init_keys) == (("dim_256",), ("dim_256",))
