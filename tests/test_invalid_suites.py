# ruff: noqa: E501  (each expected line is one exact message, kept whole to be read as a user sees it)
"""The invalid-suite corpus: every file in tests/invalid/ fails with exactly these problems.

Each line is what `evalspec validate` prints: file:line:col: where: what; how to fix. The table
pins the full text, line and column, so a vaguer message or a moved position fails a test.
Run from tests/invalid/ so file names print as a user in that directory would see them.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from support import in_process

from evalspec.api import load_suite
from evalspec.errors import SpecError

pytestmark = pytest.mark.usefixtures("no_plugins")

CORPUS = Path(__file__).parent / "invalid"

EXPECTED: dict[str, list[str]] = {
    "base_url_without_scheme": [
        "base_url_without_scheme.yaml:4:43: models[0].base_url: '127.0.0.1:8765' is not a URL starting with http:// or https://, so no request could reach it; write the whole address, e.g. http://127.0.0.1:8765",
    ],
    "expected_date_not_a_date": [
        "expected_date_not_a_date.yaml:16:46: cases[0].expect.tool_calls[0].date: the expected date 'March 5th' is not a date the datetime critic can read, so every answer would fail; write it as a date and time the model should produce, e.g. 2025-03-05 or 2025-03-05T14:00 (ISO 8601; `parse: dateutil` on the critic reads more)",
    ],
    "matrix_300_by_300": [
        "matrix_300_by_300.yaml:6:13: cases[0]: with this case the suite has more than 10000 cases after matrix expansion; keep the suite under 10000 cases: split it into several suites, or raise the limit with EVALSPEC_MAX_CASES",
    ],
    "one_pass_structural_and_semantic": [
        "one_pass_structural_and_semantic.yaml:10:13: cases[0].trials: expected a whole number, got text; for example: 3",
        "one_pass_structural_and_semantic.yaml:14:28: cases[1].expect.tool_calls[0]: 'get_wether' is not a tool of this suite; did you mean 'get_weather'?",
        "one_pass_structural_and_semantic.yaml:15:11: cases[2]: two cases are named 'weather in Rome' (the other is cases[1]); give every case a unique name; with a matrix, use {{ variables }}",
    ],
    "yaml_hash_cuts_text": [
        "yaml_hash_cuts_text.yaml:6:33: tools[0].description: the text ends at ` #`: YAML reads 'Read a channel' and takes the rest of the line for a comment; put the whole text in quotes: \"Read a channel #slack\" (or, for a comment, write `# ` with a space after the #)",
        "yaml_hash_cuts_text.yaml:13:43: cases[0].user: the text ends at ` #`: YAML reads 'What are the last 2 messages in' and takes the rest of the line for a comment; put the whole text in quotes: \"What are the last 2 messages in #general?\" (or, for a comment, write `# ` with a space after the #)",
        "yaml_hash_cuts_text.yaml:20:19: cases[0].expect.final_answer.contains[0]: the text ends at ` #`: YAML reads 'Lunch' and takes the rest of the line for a comment; put the whole text in quotes: \"Lunch #1\" (or, for a comment, write `# ` with a space after the #)",
    ],
    "yaml_indent_five_spaces": [
        "yaml_indent_five_spaces.yaml:7:1: YAML syntax error: this line is indented 5 spaces, which lines it up with nothing above it (the keys and items above start at 0, 2 or 4 spaces); line it up with the key it belongs with, e.g. 4 spaces like `user:` on line 6",
    ],
    "yaml_quote_inside_single_quotes": [
        "yaml_quote_inside_single_quotes.yaml:6:11: YAML syntax error: the text in single quotes ends at the ' in \"'What's\", and more text follows it; inside single quotes write a quote twice: 'What''s on my calendar today?'; or use double quotes: \"What's on my calendar today?\"",
    ],
    "yaml_text_read_as_time_or_false": [
        'yaml_text_read_as_time_or_false.yaml:12:11: cases[0].name: expected text, got a number: YAML reads 14:30 as the number 870 (YAML counts a:b as minutes and seconds, in base 60); put it in quotes to keep it as text: "14:30"',
        'yaml_text_read_as_time_or_false.yaml:13:11: cases[0].user: expected text or a mapping, got true/false: YAML reads no as false (YAML takes yes/no and on/off for true/false); put it in quotes to keep it as text: "no"',
        'yaml_text_read_as_time_or_false.yaml:19:30: cases[1].expect.tool_calls[0].start: the expected start 840 does not fit book_room\'s parameter: expected text, got a number: YAML reads 14:00 as the number 840 (YAML counts a:b as minutes and seconds, in base 60); put it in quotes to keep it as text: "14:00"',
        'yaml_text_read_as_time_or_false.yaml:19:48: cases[1].expect.tool_calls[0].projector: the expected projector False does not fit book_room\'s parameter: expected text, got true/false: YAML reads no as false (YAML takes yes/no and on/off for true/false); put it in quotes to keep it as text: "no"',
    ],
    "alias_bomb": [
        "alias_bomb.yaml:7:4: this value repeats *aliases so often that it expands to more than 200000 values; write the data out, or repeat an &anchor only a few times",
    ],
    "api_key_in_suite": [
        "api_key_in_suite.yaml:5:18: models[0].api_key_env: this must be the name of an environment variable, not the key itself; never put an API key in a suite; write `api_key_env: OPENAI_API_KEY` and set that variable",
    ],
    "bad_count_condition": [
        "bad_count_condition.yaml:15:33: cases[0].evaluators[0].tool_call_count.counts.get_weather: 'about 2' is not written the expected way: write a number, or an operator (==, = as in UiPath, !=, <, <=, >, >=) followed by a number; for example: >=1",
    ],
    "binary_file": [
        "binary_file.yaml:1:12: is a binary file, not YAML text (it holds a NUL byte); name a .yaml suite file",
    ],
    "gate_and_budget": [
        "gate_and_budget.yaml:6:9: gate.mode: 'sometimes' is not allowed here; choose one of: any_regression, significant_drop, none",
        "gate_and_budget.yaml:7:13: gate.max_drop: 5 is out of range: it must be from 0 to 1; scores are shares from 0 to 1: write 0.05 for 5%",
        "gate_and_budget.yaml:9:22: budgets.case.max_tokens: -1 is out of range: it must be 0 or more; for example: 20000",
        "gate_and_budget.yaml:9:26: budgets.case: unknown key 'max_dollars'; did you mean 'max_cost'?",
        "gate_and_budget.yaml:16:12: cases[0].flaky: expected true or false, got text; for example: true",
    ],
    "case_tools_missing_expected": [
        "case_tools_missing_expected.yaml:14:11: cases[0].expect.tool_calls[0]: the case expects a call to 'get_weather' but does not offer it; add get_weather to the case's `tools:` list",
    ],
    "call_item_not_one_call": [
        "call_item_not_one_call.yaml:13:11: cases[0].expect.tool_calls[0]: write one call as `{tool_name: {arg: value}}` or `{tool: name, args: {...}}`; put each call in its own `- ` list item",
        "call_item_not_one_call.yaml:18:11: cases[1].expect.tool_calls[0]: write one call as `{tool_name: {arg: value}}` or `{tool: name, args: {...}}`; put each call in its own `- ` list item",
        "call_item_not_one_call.yaml:23:11: cases[2].expect.tool_calls[0]: write one call as `{tool_name: {arg: value}}` or `{tool: name, args: {...}}`; put each call in its own `- ` list item",
    ],
    "case_tools_unknown": [
        "case_tools_unknown.yaml:11:13: cases[0].tools[0]: 'get_wether' is not a tool of this suite; did you mean 'get_weather'?",
        "case_tools_unknown.yaml:14:11: cases[0].expect.tool_calls[0]: the case expects a call to 'get_weather' but does not offer it; add get_weather to the case's `tools:` list",
    ],
    "case_without_expect": [
        "case_without_expect.yaml:5:5: cases[0]: the case says nothing about what a good model does; add `expect: {tool_calls: [...]}` or `expect: {no_tool_calls: true}`; or `capture: true` to record what models call and write it with `evalspec capture accept`",
    ],
    "case_without_user": [
        "case_without_user.yaml:5:5: cases[0]: the case has no user message; add `user: <what the user asks>`",
    ],
    "count_unknown_tool": [
        "count_unknown_tool.yaml:15:20: cases[0].evaluators[0].tool_call_count.counts.get_wether: 'get_wether' is not a tool of this suite; did you mean 'get_weather'?",
    ],
    "critic_on_unknown_argument": [
        "critic_on_unknown_argument.yaml:18:7: cases[0].critics.username: critic for 'username', but send_dm_to_user takes no such argument; did you mean 'user_name'?",
    ],
    "custom_tag": [
        "custom_tag.yaml:7:13: cases[0].expect: the tag !expectation is not allowed (nothing in a suite is run or constructed); suites hold plain data only: remove the tag",
    ],
    "deep_nesting_block": [
        "deep_nesting_block.yaml:66:127: the data nests deeper than 64 levels; flatten it: a suite never needs this much nesting",
    ],
    "deep_nesting_flow": [
        "deep_nesting_flow.yaml:4:71: the data nests deeper than 64 levels; flatten it: a suite never needs this much nesting",
    ],
    "duplicate_case_names": [
        "duplicate_case_names.yaml:8:11: cases[1]: two cases are named 'hello' (the other is cases[0]); give every case a unique name; with a matrix, use {{ variables }}",
    ],
    "duplicate_case_names_after_matrix": [
        "duplicate_case_names_after_matrix.yaml:5:11: cases[0] (matrix row 2): two cases are named 'greet' (the other is cases[0] (matrix row 1)); give every case a unique name; with a matrix, use {{ variables }}",
    ],
    "duplicate_model_names": [
        "duplicate_model_names.yaml:5:5: models[1]: two models are named 'gpt-4o-mini'; give each a distinct `name:` (e.g. gpt-4o-mini@t0)",
    ],
    "duplicate_tool_names": [
        "duplicate_tool_names.yaml:7:11: tools[1].name: tool 'get_weather' is defined twice (first on line 5); remove or rename one of them",
    ],
    "duplicate_yaml_key": [
        "duplicate_yaml_key.yaml:7:5: cases[0].user: duplicate key 'user' (first given on line 6); remove one of them; the later one would silently replace the first",
    ],
    "empty_cases": [
        'empty_cases.yaml:4:8: cases: must not be empty; for example: [{"name": "weather in Paris", "user": "How warm is it in Paris?", "expect": {"tool_calls": [{"get_weather": {"city": "Paris"}}]}}]',
    ],
    "empty_file": [
        "empty_file.yaml:1:1: the file is empty; a suite needs `suite:` and `cases:`; see `evalspec init`",
    ],
    "expected_arg_not_taken": [
        "expected_arg_not_taken.yaml:16:29: cases[0].expect.tool_calls[0].user: 'send_dm_to_user' has no argument 'user'; did you mean 'user_name'?",
    ],
    "expected_arg_out_of_range": [
        "expected_arg_out_of_range.yaml:15:31: cases[0].expect.tool_calls[0].limit: the expected limit 1000 does not fit list_users's parameter: it must be from 1 to 200; fix the value, or the tool's `parameters`",
    ],
    "expected_arg_wrong_type": [
        "expected_arg_wrong_type.yaml:15:31: cases[0].expect.tool_calls[0].limit: the expected limit 'ten' does not fit list_users's parameter: expected a whole number, got text; fix the value, or the tool's `parameters`",
    ],
    "fail_above_warn": [
        "fail_above_warn.yaml:5:19: rubric.fail_threshold: fail_threshold 0.9 is above warn_threshold 0.8; scores below fail_threshold fail and below warn_threshold warn, so fail_threshold must be the lower one",
    ],
    "fail_above_warn_case_override": [
        "fail_above_warn_case_override.yaml:10:23: cases[0].rubric.fail_threshold: fail_threshold 0.95 is above warn_threshold 0.9 (from the suite's rubric); scores below fail_threshold fail and below warn_threshold warn, so fail_threshold must be the lower one",
    ],
    "final_answer_invalid_regex": [
        "final_answer_invalid_regex.yaml:10:16: cases[0].expect.final_answer.regex: invalid regular expression: unterminated character set at position 0; escape special characters with \\",
    ],
    "history_bad_role": [
        "history_bad_role.yaml:7:16: cases[0].history[0].role: 'human' is not allowed here; choose one of: system, user, assistant, tool",
    ],
    "include_cases_syntax_error": [
        "included/cases_with_unclosed_list.yaml:2:10: YAML syntax error: the [ opened here is not closed (found '}' on line 2 first); close it with ], or separate items with commas",
    ],
    "include_cycle": [
        "included/cycle_b.yaml:2:12: cases[0].include: include cycle: cycle_a.yaml -> cycle_b.yaml -> cycle_a.yaml; remove the include that leads back to a file already being included",
    ],
    "include_missing_file": [
        "include_missing_file.yaml:5:14: tools[0].include: the included file 'included/no_such_tools.yaml' does not exist; check the path; it is relative to the file that includes it",
    ],
    "include_not_list": [
        "included/single_tool.yaml:2:1: an included tools file must hold a list of tools (it is included from include_not_list.yaml, line 5); write each of the tools as a `- ` item, or put them under `tools:`",
    ],
    "include_self": [
        "include_self.yaml:8:14: cases[1].include: include cycle: include_self.yaml -> include_self.yaml; remove the include that leads back to a file already being included",
    ],
    "include_with_mistake": [
        "included/tools_with_typo.yaml:3:3: tools[0]: unknown key 'descripton'; did you mean 'description'?",
    ],
    "key_not_text": [
        "key_not_text.yaml:4:3: a key must be plain text, not a list or mapping; write keys as plain words, like `name:`",
    ],
    "lone_surrogate": [
        "lone_surrogate.yaml:5:11: cases[0].name: the text holds a lone surrogate escape \\ud800, which is not a character; write the character itself, or escape it as \\UXXXXXXXX",
    ],
    "matrix_mapping_not_list": [
        'matrix_mapping_not_list.yaml:7:12: cases[0].matrix.who: expected a list, got text; for example: ["general", "random"]',
    ],
    "matrix_not_list": [
        'matrix_not_list.yaml:6:13: cases[0].matrix: expected a list or a mapping, got text; for example: [{"channel": "general", "text": "Lunch at noon"}]',
    ],
    "matrix_row_missing_variable": [
        "matrix_row_missing_variable.yaml:8:9: cases[0].matrix[1]: matrix row 2 has no variable 'greeting', which cases[0].user uses; add `greeting: ...` to this row, as the other rows have",
    ],
    "missing_cases": [
        'missing_cases.yaml:2:1: (top level): missing required key \'cases\'; add `cases: [{"name": "weather in Paris", "user": "How warm is it in Paris?", "expect": {"tool_calls": [{"get_weather": {"city": "Paris"}}]}}]`',
    ],
    "misspelt_critics_key": [
        "misspelt_critics_key.yaml:13:5: cases[0]: unknown key 'critic'; did you mean 'critics'?",
    ],
    "misspelt_expect": [
        "misspelt_expect.yaml:7:5: cases[0]: unknown key 'expcet'; did you mean 'expect'?",
    ],
    "misspelt_model_param": [
        "misspelt_model_param.yaml:5:14: models[0].params: unknown key 'temprature'; did you mean 'temperature'?",
    ],
    "misspelt_rubric_key": [
        "misspelt_rubric_key.yaml:5:3: rubric: unknown key 'fail_treshold'; did you mean 'fail_threshold'?",
    ],
    "misspelt_tool_calls": [
        "misspelt_tool_calls.yaml:11:7: cases[0].expect: unknown key 'tool_call'; did you mean 'tool_calls'?",
    ],
    "misspelt_tool_key": [
        "misspelt_tool_key.yaml:6:5: tools[0]: unknown key 'parameter'; did you mean 'parameters'?",
    ],
    "negative_critic_weight": [
        "negative_critic_weight.yaml:8:32: critics.city.weight: -1 is out of range: it must be from 0 to 1000000; use from 0 to 1000000 (0 makes it not count)",
    ],
    "negative_evaluator_weight": [
        "negative_evaluator_weight.yaml:10:17: cases[0].evaluators[0].weight: -2 is out of range: it must be from 0 to 1000000; for example: 0.5",
    ],
    "negative_tool_selection_weight": [
        "negative_tool_selection_weight.yaml:5:26: rubric.tool_selection_weight: -0.5 is out of range: it must be from 0 to 1000000; for example: 1",
    ],
    "no_models": [
        "no_models.yaml:2:1: (top level): the suite names no model to evaluate; add `models: [gpt-4o-mini]` (any OpenAI-compatible model id)",
    ],
    "no_tool_calls_and_calls": [
        "no_tool_calls_and_calls.yaml:11:22: cases[0].expect.no_tool_calls: no_tool_calls is true but tool_calls lists calls; keep one of the two",
    ],
    "not_utf8": [
        "not_utf8.yaml:4:14: is not valid UTF-8 text (byte 0xe9); save the file as UTF-8",
    ],
    "numeric_critic_without_range": [
        'numeric_critic_without_range.yaml:14:24: cases[0].critics.level.numeric: numeric critic: needs min and max (the range of values), or a tolerance; for example: {numeric: {"min": 0, "max": 1000, "threshold": 0.9}}',
    ],
    "only_comments": [
        "only_comments.yaml:1:1: the file holds only comments; a suite needs `suite:` and `cases:`; see `evalspec init`",
    ],
    "python_tag": [
        "python_tag.yaml:6:11: cases[0].user: the tag !!python/object/apply:os.system is not allowed (nothing in a suite is run or constructed); suites hold plain data only: remove the tag",
    ],
    "regex_critic_invalid_pattern": [
        "regex_critic_invalid_pattern.yaml:14:24: cases[0].critics.message.regex: regex critic: the pattern 'hel(lo' is invalid: missing ), unterminated subpattern at position 3; write a valid regular expression; put \\ before ( ) [ ] . * + ? to match them as text",
    ],
    "response_output_and_error": [
        "response_output_and_error.yaml:8:9: tools[0].responses[0]: a response gives either `output` or `error`, not both; split it into two rules",
    ],
    "response_when_unknown_argument": [
        "response_when_unknown_argument.yaml:8:16: tools[0].responses[0].when.town: 'get_weather' has no argument 'town'; arguments: city",
    ],
    "sandbox_escape": [
        "sandbox_escape.yaml:6:11: cases[0].user: template refused by the sandbox: access to attribute '__class__' of 'str' object is unsafe; templates may only use variables and filters",
    ],
    "several_mistakes_schema": [
        "several_mistakes_schema.yaml:3:1: (top level): unknown key 'modles'; did you mean 'models'?",
        "several_mistakes_schema.yaml:5:19: rubric.fail_threshold: 1.2 is out of range: it must be from 0 to 1; for example: 0.85",
        "several_mistakes_schema.yaml:8:5: cases[0]: unknown key 'usr'; did you mean 'user'?",
        "several_mistakes_schema.yaml:12:13: cases[1].trials: expected a whole number, got text; for example: 3",
    ],
    "several_mistakes_semantic": [
        "several_mistakes_semantic.yaml:3:23: models[1]: two models are named 'gpt-4o-mini'; give each a distinct `name:` (e.g. gpt-4o-mini@t0)",
        "several_mistakes_semantic.yaml:4:26: rubric.fail_threshold: fail_threshold 0.9 is above warn_threshold 0.8; scores below fail_threshold fail and below warn_threshold warn, so fail_threshold must be the lower one",
        "several_mistakes_semantic.yaml:17:11: cases[0].expect.tool_calls[0]: 'send_dm' is not a tool of this suite; did you mean 'send_dm_to_user'?",
        "several_mistakes_semantic.yaml:18:11: cases[1]: two cases are named 'dm' (the other is cases[0]); give every case a unique name; with a matrix, use {{ variables }}",
        "several_mistakes_semantic.yaml:24:7: cases[1].critics.mesage: critic for 'mesage', but send_dm_to_user takes no such argument; did you mean 'message'?",
    ],
    "several_mistakes_templates": [
        "several_mistakes_templates.yaml:6:11: cases[0].name: template uses undefined variable 'cty'; did you mean 'city'? define it in vars or the case's matrix (defined: city)",
        "several_mistakes_templates.yaml:10:11: cases[1].user: template refused by the sandbox: access to attribute '__class__' of 'str' object is unsafe; templates may only use variables and filters",
        "several_mistakes_templates.yaml:11:13: cases[1].system: template error: No filter named 'nosuchfilter'; use a built-in Jinja2 filter, like upper, lower, replace or default",
    ],
    "similarity_threshold_out_of_range": [
        "similarity_threshold_out_of_range.yaml:14:29: cases[0].critics.message.similarity: 80 is out of range: it must be from 0 to 1; scores are shares from 0 to 1: write 0.8 for 80%",
    ],
    "tab_indentation": [
        "tab_indentation.yaml:6:1: YAML syntax error: a tab character is used for indentation; indent with spaces, not tabs",
    ],
    "template_syntax_error": [
        "template_syntax_error.yaml:7:11: cases[0].user: template syntax error: unexpected '}'; write variables as {{ name }}: every {{ needs a closing }}",
    ],
    "threshold_above_one": [
        "threshold_above_one.yaml:6:19: rubric.warn_threshold: 1.5 is out of range: it must be from 0 to 1; for example: 0.95",
    ],
    "threshold_negative": [
        "threshold_negative.yaml:5:19: rubric.fail_threshold: -0.1 is out of range: it must be from 0 to 1; for example: 0.85",
    ],
    "tool_parameters_invalid_schema": [
        "tool_parameters_invalid_schema.yaml:9:22: tools[0].parameters.properties.city.type: 'text' is not a JSON Schema type; did you mean 'string'? types: string, number, integer, boolean, object, array, null",
    ],
    "tool_parameters_not_object": [
        "tool_parameters_not_object.yaml:6:17: tools[0].parameters: tool parameters must be `type: object`; wrap arguments in `properties:`",
    ],
    "top_level_list": [
        "top_level_list.yaml:2:1: a suite must be a mapping of keys, not a list; start with `suite: <name>` and `cases:`; see `evalspec init`",
    ],
    "top_level_scalar": [
        "top_level_scalar.yaml:2:1: a suite must be a mapping of keys, not a single value ('just some text'); start with `suite: <name>` and `cases:`; see `evalspec init`",
    ],
    "trials_zero": [
        "trials_zero.yaml:7:13: cases[0].trials: 0 is out of range: it must be from 1 to 1000; for example: 3",
    ],
    "two_critics_in_one": [
        "two_critics_in_one.yaml:8:9: critics.city: one critic mapping names 2 critics (binary, similarity); keep exactly one critic, for example: {similarity: 0.8, weight: 1}",
    ],
    "unclosed_bracket": [
        "unclosed_bracket.yaml:3:9: YAML syntax error: the [ opened here is not closed (found ':' on line 4 first); close it with ], or separate items with commas",
    ],
    "unclosed_quote": [
        'unclosed_quote.yaml:6:11: YAML syntax error: the quote " opened here is never closed; end the text with "',
    ],
    "undefined_template_variable": [
        "undefined_template_variable.yaml:7:11: cases[0].user: template uses undefined variable 'persn'; did you mean 'person'? define it in vars or the case's matrix (defined: person)",
    ],
    "unknown_critic_in_mapping": [
        "unknown_critic_in_mapping.yaml:8:10: critics.city: unknown key 'similarty'; did you mean 'similarity'?",
    ],
    "unknown_critic_name": [
        "unknown_critic_name.yaml:8:9: critics.city: unknown critic 'binery'; did you mean 'binary'? choose one of: binary, exact, contains, similarity, numeric, datetime, regex, one_of, json_similarity, ignore",
    ],
    "unknown_evaluator": [
        "unknown_evaluator.yaml:9:9: cases[0].evaluators[0]: unknown key 'tool_call_ordr'; did you mean 'tool_call_order'?",
    ],
    "unknown_evaluator_name_only": [
        "unknown_evaluator_name_only.yaml:9:9: cases[0].evaluators[0]: unknown evaluator 'no_tool_call'; did you mean 'no_tool_calls'? choose one of: tool_call_order, tool_call_count, tool_call_args, tool_call_output, no_tool_calls, api_call_score",
    ],
    "unknown_tool_in_expect": [
        "unknown_tool_in_expect.yaml:16:11: cases[0].expect.tool_calls[0]: 'send_dm' is not a tool of this suite; did you mean 'send_dm_to_user'?",
    ],
    "unknown_tool_long_form": [
        "unknown_tool_long_form.yaml:12:17: cases[0].expect.tool_calls[0]: 'get_wether' is not a tool of this suite; did you mean 'get_weather'?",
    ],
    "unknown_top_level_key": [
        "unknown_top_level_key.yaml:3:1: (top level): unknown key 'modles'; did you mean 'models'?",
    ],
    "unquoted_colon": [
        "unquoted_colon.yaml:6:21: YAML syntax error: mapping values are not allowed here; put quotes around text that contains ': '",
    ],
    "wrong_type_cases_mapping": [
        'wrong_type_cases_mapping.yaml:5:3: cases: expected a list, got a mapping; for example: [{"name": "weather in Paris", "user": "How warm is it in Paris?", "expect": {"tool_calls": [{"get_weather": {"city": "Paris"}}]}}]',
    ],
    "wrong_type_trials": [
        "wrong_type_trials.yaml:4:9: trials: expected a whole number, got text; for example: 3",
    ],
    "wrong_type_user_list": [
        "wrong_type_user_list.yaml:6:11: cases[0].user: expected text or a mapping, got a list; for example: Send a direct message to johndoe saying 'Hello'",
    ],
    "hostile_embeddings_cache_escape": [
        "hostile_embeddings_cache_escape.yaml:4:25: embeddings.cache_dir: '~/.ssh' cannot be written: it starts with ~ (a home directory); give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_final_answer_lookahead": [
        "hostile_final_answer_lookahead.yaml:9:29: cases[0].expect.final_answer.regex: invalid regular expression: it uses a feature that cannot run in linear time (invalid perl operator: (?=); backreferences such as \\1 and lookarounds such as (?=...) are not supported; escape special characters with \\",
    ],
    "hostile_include_device": [
        "hostile_include_device.yaml:5:14: tools[0].include: the included file '/dev/zero' is a character device; check the path; it is relative to the file that includes it",
    ],
    "hostile_include_directory": [
        "hostile_include_directory.yaml:5:14: tools[0].include: the included file 'included' is a directory; check the path; it is relative to the file that includes it",
    ],
    "hostile_include_symlink_loop": [
        "hostile_include_symlink_loop.yaml:5:14: tools[0].include: the included file 'included/loop_a.yaml' is a symbolic link that loops back on itself; check the path; it is relative to the file that includes it",
    ],
    "hostile_inf_weight": [
        "hostile_inf_weight.yaml:8:32: critics.city.weight: .inf is not a finite number (NaN and infinities are refused); write a finite number, or quote it if it is meant as text",
    ],
    "hostile_matrix_too_many_cases": [
        "hostile_matrix_too_many_cases.yaml:10:13: cases[1]: with this case the suite has more than 10000 cases after matrix expansion; keep the suite under 10000 cases: split it into several suites, or raise the limit with EVALSPEC_MAX_CASES",
    ],
    "hostile_nan_threshold": [
        "hostile_nan_threshold.yaml:5:19: rubric.fail_threshold: .nan is not a finite number (NaN and infinities are refused); write a finite number, or quote it if it is meant as text",
    ],
    "hostile_negative_inf_threshold": [
        "hostile_negative_inf_threshold.yaml:5:19: rubric.warn_threshold: -.Inf is not a finite number (NaN and infinities are refused); write a finite number, or quote it if it is meant as text",
    ],
    "hostile_recordings_absolute": [
        "hostile_recordings_absolute.yaml:4:19: run.recordings: '/tmp/evalspec-recordings.jsonl' cannot be written: it is an absolute path; give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_recordings_home": [
        "hostile_recordings_home.yaml:4:19: run.recordings: '~/.bashrc' cannot be written: it starts with ~ (a home directory); give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_recordings_parent": [
        "hostile_recordings_parent.yaml:4:19: run.recordings: '../../outside.jsonl' cannot be written: it leads outside the suite's directory; give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_regex_backreference": [
        "hostile_regex_backreference.yaml:14:24: cases[0].critics.message.regex: regex critic: the pattern '(a+)\\\\1' is invalid: it uses a feature that cannot run in linear time (invalid escape sequence: \\1); backreferences such as \\1 and lookarounds such as (?=...) are not supported; write a valid regular expression; put \\ before ( ) [ ] . * + ? to match them as text",
    ],
    "hostile_simulate_cache_escape": [
        "hostile_simulate_cache_escape.yaml:7:43: tools[0].simulate.cache: '../../../etc/cron.d/evalspec' cannot be written: it leads outside the suite's directory; give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_template_concat": [
        "hostile_template_concat.yaml:6:11: cases[0].user: template stopped: the template builds a text longer than 1000000 characters; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_doubling": [
        "hostile_template_doubling.yaml:6:11: cases[0].user: template stopped: the template builds a value longer than 1000000 characters or items; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_format_width": [
        "hostile_template_format_width.yaml:6:11: cases[0].user: template stopped: the template formats with a width of a million or more; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_huge_power": [
        "hostile_template_huge_power.yaml:6:11: cases[0].user: template stopped: the template computes a number larger than 100000 bits; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_huge_repeat": [
        "hostile_template_huge_repeat.yaml:6:11: cases[0].user: template stopped: the template repeats a value to more than 1000000 characters or items; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_macro_recursion": [
        "hostile_template_macro_recursion.yaml:6:11: cases[0].user: template stopped: the template takes longer than 2 seconds to render; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_nan": [
        "hostile_template_nan.yaml:13:31: cases[0].expect.tool_calls[0].get_weather.days: the template produces NaN or an infinite number; make it produce a finite number",
    ],
    "hostile_template_nested_loops": [
        "hostile_template_nested_loops.yaml:6:11: cases[0].user: template stopped: the template makes more than 1000000 loop iterations or calls; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_padding_filter": [
        "hostile_template_padding_filter.yaml:6:11: cases[0].user: template stopped: the filter center is given 300000000; sizes above 1000000 are refused; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_too_many_includes": [
        "hostile_too_many_includes.yaml:105:14: tools[100].include: the suite includes more than 100 files in all; include fewer, larger files",
    ],
    "hostile_tool_cache_absolute": [
        "hostile_tool_cache_absolute.yaml:7:19: tools[0].cache.file: '/etc/passwd' cannot be written: it is an absolute path; give a path relative to the suite file that stays beside it or below it, for example: recordings/answers.jsonl",
    ],
    "hostile_template_indent_bomb": [
        "hostile_template_indent_bomb.yaml:6:11: cases[0].user: template stopped: the filter indent would build more than 1000000 characters; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_join_bomb": [
        "hostile_template_join_bomb.yaml:6:11: cases[0].user: template stopped: the filter join would build more than 1000000 characters; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_replace_bomb": [
        "hostile_template_replace_bomb.yaml:6:11: cases[0].user: template stopped: the filter replace would build more than 1000000 characters; templates are for filling in values; write large or repeated data out",
    ],
    "hostile_template_tojson_indent": [
        "hostile_template_tojson_indent.yaml:6:11: cases[0].user: template stopped: the filter tojson is given an indent above 16; templates are for filling in values; write large or repeated data out",
    ],
}


REVIEW_LIMITS = {
    "EVALSPEC_MAX_CASES": "10000",
    "EVALSPEC_MAX_PLAN_ITEMS": "100000",
    "EVALSPEC_MAX_TOOLS": "1000",
    "EVALSPEC_MAX_RENDERED_CHARS": "32000000",
}
"""The limits `review` holds a pull request's suites to (docs/security.md), set as whoever runs
evalspec sets them."""


def _problems(name: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_suite(f"{name}.yaml")
    return [str(p) for p in info.value.problems]


@pytest.fixture(autouse=True)
def _in_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS)
    for name, value in REVIEW_LIMITS.items():  # what a pull request may hold: review's limits
        monkeypatch.setenv(name, value)


def test_corpus_is_large_and_every_file_is_in_the_table() -> None:
    files = sorted(p.stem for p in CORPUS.glob("*.yaml"))
    assert len(files) >= 45
    assert files == sorted(EXPECTED)


HEAVY = {"hostile_template_macro_recursion"}
"""Files whose refusal takes seconds of work: in the full suite only (`--all`)."""
NAMES = [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in sorted(EXPECTED)]


@pytest.mark.parametrize("name", NAMES)
def test_exact_messages(name: str) -> None:
    assert _problems(name) == EXPECTED[name]


@pytest.mark.parametrize("name", NAMES)
def test_every_problem_has_a_real_place_and_a_fix(name: str) -> None:
    with pytest.raises(SpecError) as info:
        load_suite(f"{name}.yaml")
    for p in info.value.problems:
        assert p.line >= 1 and p.column >= 1
        assert p.hint, f"{p} has no hint"
        assert "Traceback" not in str(p)


@pytest.mark.parametrize(
    "name",
    [n for n in sorted(EXPECTED) if n.startswith(("several_mistakes", "one_pass"))],
)
def test_several_mistakes_are_all_reported_at_once(name: str) -> None:
    assert len(_problems(name)) >= 3


def test_python_tag_executes_nothing() -> None:
    marker = CORPUS / "evalspec-python-tag-was-executed"
    _problems("python_tag")
    assert not marker.exists()


def test_api_key_is_never_echoed() -> None:
    assert not any("SECRET" in line for line in _problems("api_key_in_suite"))


def test_alias_bomb_is_refused_without_expanding_it() -> None:
    """An alias reuses the anchored value (no copy), and sizes are counted, not built."""
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as info:
            load_suite("alias_bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "expands to more than 200000 values" in str(info.value)
    # 9**9 "lol"s fully expanded would need gigabytes; refusing early stays tiny.
    assert peak < 20 * 1024 * 1024


@pytest.mark.parametrize("name", ["deep_nesting_flow", "deep_nesting_block"])
def test_deep_nesting_is_refused_at_its_place(name: str) -> None:
    (line,) = _problems(name)
    assert "nests deeper than" in line
    assert not line.startswith(f"{name}.yaml:1:1:")


def test_a_schema_repeated_is_checked_once_and_reported_at_each_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jsonschema's check of a tool's schema walks the meta-schema (milliseconds a schema); a
    suite that repeats one schema (generated tools, review's base and head) has it checked once,
    and each tool with a mistake in it still gets its own problem at its own place."""
    from jsonschema import Draft202012Validator

    schema = (
        f"{{type: object, description: '{tmp_path.name}', properties: {{city: {{type: text}}}}}}"
    )
    tools = "".join(f"  - name: t{i}\n    parameters: {schema}\n" for i in range(30))
    suite = tmp_path / "s.yaml"
    suite.write_text(
        f"suite: s\nmodels: [m]\ntools:\n{tools}cases:\n  - name: c\n    user: hi\n"
        "    expect: {no_tool_calls: true}\n",
        encoding="utf-8",
    )
    checked: list[object] = []
    check = Draft202012Validator.check_schema

    def counted(schema: object, *args: object, **kwargs: object) -> None:
        checked.append(schema)
        check(schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", staticmethod(counted))
    for _ in range(2):
        with pytest.raises(SpecError) as info:
            load_suite(suite)
        assert [str(p).removeprefix(str(suite)) for p in info.value.problems] == [
            f":{5 + 2 * i}:106: tools[{i}].parameters.properties.city.type: 'text' is not a JSON "
            "Schema type; did you mean 'string'? types: string, number, integer, boolean, "
            "object, array, null"
            for i in range(30)
        ]
    assert len([s for s in checked if tmp_path.name in str(s)]) == 1


def test_a_syntax_error_in_an_included_file_of_cases_is_a_problem_not_a_traceback() -> None:
    """The last batch of a streamed suite's items is built after its parser is done: a file
    named there is parsed then, and its syntax error once escaped as PyYAML's exception."""
    done = in_process("validate", "include_cases_syntax_error.yaml", cwd=CORPUS)
    assert done.returncode == 2
    assert EXPECTED["include_cases_syntax_error"][0] in (done.stdout + done.stderr).splitlines()
    assert "Traceback" not in done.stdout + done.stderr


def test_run_refuses_a_suite_whose_included_file_does_not_parse(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = in_process(
        "run", "include_cases_syntax_error.yaml", "--record", "offline", "--out", out, cwd=CORPUS
    )
    assert done.returncode == 2
    assert EXPECTED["include_cases_syntax_error"][0] in (done.stdout + done.stderr).splitlines()
    assert not out.exists()  # nothing half-written
