"""Tests for scripts/check-layering.py on small fake trees."""
import importlib.util
import io
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('check_layering', os.path.join(HERE, '..', 'check-layering.py'))
layering = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layering)


class Tree:
    made = []

    def __init__(self, files):
        self.dir = tempfile.TemporaryDirectory()
        Tree.made.append(self.dir)
        for path, text in files.items():
            full = os.path.join(self.dir.name, 'Sources', path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'w') as f:
                f.write(text)

    def run(self, **kw):
        out = io.StringIO()
        code = layering.check(self.dir.name, out=out, **kw)
        return code, out.getvalue()


class LayeringTests(unittest.TestCase):
    def tearDown(self):
        while Tree.made:
            Tree.made.pop().cleanup()

    def test_clean_tree_passes(self):
        code, out = Tree({'A/X/a.swift': 'public struct Alpha {}\n', 'A/Y/b.swift': 'let a = Alpha()\n',
                          'B/b.swift': 'import A\nstruct Beta {}\n'}).run()
        self.assertEqual(code, 0, out)
        self.assertIn('2 modules, 3 folders, no cycles', out)

    def test_folder_cycle_is_reported_with_examples(self):
        code, out = Tree({'A/X/a.swift': 'struct Alpha { var b: Beta }\n', 'A/Y/b.swift': 'struct Beta {}\nlet x = Alpha()\n'}).run()
        self.assertEqual(code, 1)
        self.assertIn('folder cycle: A/X -> A/Y -> A/X', out)
        self.assertIn('Sources/A/X/a.swift:1: Beta', out)
        self.assertIn('Sources/A/Y/b.swift:2: Alpha', out)

    def test_module_cycle_is_reported(self):
        code, out = Tree({'A/a.swift': 'import B\n', 'B/b.swift': 'import A\n', 'C/c.swift': 'import Foundation\n'}).run()
        self.assertEqual(code, 1)
        self.assertIn('module cycle: A -> B -> A', out)

    def test_names_in_comments_and_strings_make_no_edge(self):
        code, out = Tree({
            'A/X/a.swift': 'struct Alpha {}\n// uses Beta\n/* Beta\n Beta */\nlet s = "Beta \\(1)"\nlet t = """\nBeta\n"""\nlet r = #"Beta"#\n',
            'A/Y/b.swift': 'struct Beta { let a: Alpha }\n',
        }).run()
        self.assertEqual(code, 0, out)

    def test_nested_declarations_are_not_top_level(self):
        code, out = Tree({'A/X/a.swift': 'struct Alpha {\n    enum Kind { case a }\n}\n',
                          'A/Y/b.swift': 'struct Beta {}\nlet k = Kind.self\n',
                          'A/X/c.swift': 'let b = Beta()\n'}).run()
        self.assertEqual(code, 0, out)

    def test_duplicate_type_names_warn_and_fail_when_strict(self):
        tree = Tree({'A/X/a.swift': 'struct Same {}\n', 'A/Y/b.swift': 'struct Same {}\n'})
        code, out = tree.run()
        self.assertEqual(code, 0, out)
        self.assertIn('warning: A: type Same is declared in A/X and in A/Y', out)
        self.assertEqual(tree.run(strict=True)[0], 1)


if __name__ == '__main__':
    unittest.main()
