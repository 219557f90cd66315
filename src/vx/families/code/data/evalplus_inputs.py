"""MBPP+ input deserialiser, vendored from evalplus 0.3.1 (``evalplus/data/mbpp.py``).

The MBPP+ release file stores every test input as JSON, which has no tuples, sets or complex
numbers; evalplus restores them per task with the function below. vx reads the release file itself
(the ``[code]`` extra does not install evalplus and its dependencies), so it carries this one
function, unchanged, to give every task exactly the inputs evalplus gives it (the ground-truth labels
depend on it: a tuple never equals a list). ``tests/families/code/test_data_tasks.py`` checks that
the inputs equal evalplus's own, types included, whenever evalplus is installed.

Copyright (c) the EvalPlus authors (https://github.com/evalplus/evalplus).
Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
compliance with the License. A copy of the License is shipped next to this file (LICENSE.evalplus)
and is at http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to
in writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the License for the specific
language governing permissions and limitations under the License.

Changes from the original: this module docstring and the ``__all__`` line; the function is verbatim.
"""

from __future__ import annotations

__all__ = ["mbpp_deserialize_inputs"]


def mbpp_deserialize_inputs(task_id: str, inputs: list) -> list:
    task_id = int(task_id.split("/")[-1])
    if task_id in [
        2,
        116,
        132,
        143,
        222,
        261,
        273,
        394,
        399,
        421,
        424,
        429,
        470,
        560,
        579,
        596,
        616,
        630,
        726,
        740,
        744,
        809,
    ]:
        modified_inputs = [[tuple(lst) for lst in inp] for inp in inputs]

    elif task_id in [
        63,
        64,
        70,
        94,
        120,
        237,
        272,
        299,
        400,
        409,
        417,
        438,
        473,
        614,
        780,
    ]:
        modified_inputs = [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]

    elif task_id in [75, 413, 444, 753]:
        modified_inputs = [[[tuple(lst) for lst in inp[0]]] + [inp[1]] for inp in inputs]

    elif task_id == 106 or task_id == 750:
        modified_inputs = [[inp[0]] + [tuple(inp[1])] for inp in inputs]

    elif task_id == 115:
        modified_inputs = [
            [[set(item) if isinstance(item, list) and len(item) else {} for item in inp[0]]] for inp in inputs
        ]

    elif task_id == 124:
        modified_inputs = [(float(inp[0]), complex(inp[1])) for inp in inputs]

    elif task_id in [250, 405, 446, 617, 720, 763, 808]:
        modified_inputs = [[tuple(inp[0])] + [inp[1]] for inp in inputs]

    elif task_id in [259, 401, 445]:
        modified_inputs = [[[tuple(lst) for lst in lst_lst] for lst_lst in inp] for inp in inputs]
        modified_inputs = [[tuple(lst) for lst in inp] for inp in modified_inputs]

    elif task_id == 278:
        modified_inputs = [[[tuple(item) if isinstance(item, list) else item for item in inp[0]]] for inp in inputs]
        modified_inputs = [[tuple(lst) for lst in inp] for inp in modified_inputs]

    elif task_id == 307:
        modified_inputs = [[tuple(inp[0])] + [inp[1], inp[2]] for inp in inputs]

    elif task_id == 722:
        modified_inputs = [[{key: tuple(value) for key, value in inp[0].items()}] + inp[1:] for inp in inputs]

    elif task_id == 252:
        modified_inputs = [[complex(inp[0])] for inp in inputs]

    elif task_id in [580, 615, 791]:

        def turn_all_list_into_tuple(inp):
            if isinstance(inp, list):
                return tuple([turn_all_list_into_tuple(item) for item in inp])
            return inp

        modified_inputs = [turn_all_list_into_tuple(inp) for inp in inputs]

    else:
        modified_inputs = inputs

    return modified_inputs
