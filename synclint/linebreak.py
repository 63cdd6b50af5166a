"""Breaking a line that a fix made too long, the way black and ruff format break it.

A fix writes its code into a line of a project that a formatter keeps at its line length; a
fix that leaves a longer line makes the formatter rewrite the fix. This module splits such a
line as black's `linegen` does, on the line's own tokens, so that the formatter has nothing
left to change:

- a line that fits is left alone (unless it has a magic trailing comma);
- otherwise the line is split at its last bracket pair (the right-hand split), keeping the
  head and tail on their own lines and the body one level deeper, after first trying to
  leave trailers that fit (`.to(device)`) glued to the tail; the value of an assignment or a
  `return` has optional parentheses around it, kept only where splitting inside the value
  does not read as well (black's `_maybe_split_omitting_optional_parens`);
- a line inside brackets is first split at its delimiters of highest priority (commas, then
  `if`/`else`, `and`/`or`, comparisons, arithmetic, method-chain dots), one element a line,
  with a trailing comma after a split at commas;
- each resulting line is broken again the same way.

A line the module cannot read (a backslash, an unfinished string) comes back unchanged.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from dataclasses import dataclass, field

COMPREHENSION, COMMA, TERNARY, LOGIC, STRING, COMPARATOR, DOT = 20, 18, 16, 14, 12, 10, 1
MATH = {"|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4, "@": 4,
        "~": 3, "**": 2}
COMPARATORS = {"<", ">", "==", "!=", "<=", ">=", "<>"}
OPENING, CLOSING = "([{", ")]}"
# Statements whose value black wraps in optional (invisible) parentheses: after `=` and these keywords.
VALUE_KEYWORDS = {"return", "if", "elif", "while", "del"}
FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
FSTRING_END = getattr(tokenize, "FSTRING_END", -2)
AUGMENTED = {"=", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", ">>=", "<<=", "**=", ":="}


class CannotSplit(Exception):
    pass


@dataclass(eq=False)
class Leaf:
    kind: int  # a tokenize token type
    value: str  # "" for an optional parenthesis not (yet) written
    prefix: str  # the whitespace before it in the source
    optional: bool = False  # an optional parenthesis black adds around a statement's value
    left: bool = True  # of an optional parenthesis: the opening one
    opening: "Leaf | None" = None  # of a closing bracket: its pair on the same line
    depth: int = 0

    @property
    def is_opening(self) -> bool:
        if self.optional:
            return self.left
        return self.kind == tokenize.OP and self.value in OPENING

    @property
    def is_closer(self) -> bool:
        """A closing bracket, paired on this line or not."""
        if self.optional:
            return not self.left
        return self.kind == tokenize.OP and self.value in CLOSING

    @property
    def is_closing(self) -> bool:
        """A closing bracket paired on this line."""
        return self.opening is not None

    def copy(self) -> "Leaf":
        return Leaf(self.kind, self.value, self.prefix, self.optional, self.left)


@dataclass
class Line:
    leaves: list[Leaf]
    indent: str
    inside_brackets: bool
    comment: str = ""  # a trailing `# comment`: it stays at the end of the last line
    should_split: bool = False  # a body to split at its commas even if it fits (a display's elements)
    delimiters: dict[int, int] = field(default_factory=dict)  # id(leaf) -> priority, at depth 0

    def __post_init__(self) -> None:
        self._mark()

    def render(self, comment: bool = True) -> str:
        if not self.leaves:
            return self.indent.rstrip() if not self.comment else self.indent + self.comment
        parts = [self.indent, self.leaves[0].value]
        parts += [leaf.prefix + leaf.value if leaf.value else "" for leaf in self.leaves[1:]]
        text = "".join(parts)
        return text + ("  " + self.comment if comment and self.comment else "")

    def _mark(self) -> None:
        """Depths, bracket pairs and delimiters, as black's BracketTracker marks them."""
        stack: list[Leaf] = []
        depth = 0
        previous: Leaf | None = None
        comprehension_depths: list[int] = []  # depths of open `for ... in` targets
        lambda_depths: list[int] = []
        for leaf in self.leaves:
            leaf.opening = None
            ends_target = False
            if leaf.is_closer:
                if stack and _pairs(stack[-1], leaf):
                    depth -= 1
                    leaf.opening = stack.pop()
                else:
                    leaf.depth = depth
                    previous = leaf
                    continue
            if leaf.kind == tokenize.NAME and leaf.value == "in" and comprehension_depths and \
                    comprehension_depths[-1] == depth - 1:
                depth -= 1
                comprehension_depths.pop()
                ends_target = True
            if leaf.kind == tokenize.OP and leaf.value == ":" and lambda_depths and lambda_depths[-1] == depth - 1:
                depth -= 1
                lambda_depths.pop()
            leaf.depth = depth
            if depth == 0 and previous is not None and not ends_target:
                before = _split_before(leaf, previous, self.leaves)
                if before:
                    self.delimiters[id(previous)] = before
                elif leaf.kind == tokenize.OP and leaf.value == ",":
                    self.delimiters[id(leaf)] = COMMA
            if leaf.is_opening:
                stack.append(leaf)
                depth += 1
            elif leaf.kind == tokenize.NAME and leaf.value == "for" and self.inside_brackets:
                comprehension_depths.append(depth)
                depth += 1
            elif leaf.kind == tokenize.NAME and leaf.value == "lambda":
                lambda_depths.append(depth)
                depth += 1
            previous = leaf

    @property
    def magic_trailing_comma(self) -> bool:
        for i, leaf in enumerate(self.leaves):
            if leaf.is_closing and leaf.value and i and self.leaves[i - 1].value == ",":
                opening = leaf.opening
                assert opening is not None
                inner = self.leaves[self.leaves.index(opening) + 1:i]
                commas = [x for x in inner if x.value == "," and x.depth == opening.depth + 1]
                if leaf.value == ")" and _is_display(opening, self.leaves) and len(commas) == 1:
                    continue  # a one-element tuple
                if leaf.value == "]" and not _is_display(opening, self.leaves) and len(commas) == 1:
                    continue  # a one-element subscript
                return True
        return False


def _pairs(opening: Leaf, closing: Leaf) -> bool:
    if opening.optional or closing.optional:
        return opening.optional and closing.optional
    return OPENING.index(opening.value) == CLOSING.index(closing.value)


def _is_keyword(leaf: Leaf) -> bool:
    return leaf.kind == tokenize.NAME and keyword.iskeyword(leaf.value) and leaf.value not in ("True", "False", "None")


def _is_operand_end(leaf: Leaf) -> bool:
    """Whether `leaf` ends an operand, so that an operator after it is binary."""
    if leaf.kind in (tokenize.NUMBER, tokenize.STRING):
        return True
    if leaf.kind == tokenize.NAME:
        return not _is_keyword(leaf)
    return leaf.is_closing and bool(leaf.value) or leaf.value == "..."


def _is_display(opening: Leaf, leaves: list[Leaf]) -> bool:
    """Whether a bracket opens a display (a tuple, list, dict or set), not a call or subscript."""
    i = leaves.index(opening)
    return i == 0 or not _is_operand_end(leaves[i - 1])


def _split_before(leaf: Leaf, previous: Leaf, leaves: list[Leaf]) -> int:
    """The priority of a delimiter before `leaf` (black's `is_split_before_delimiter`)."""
    value = leaf.value
    if leaf.kind == tokenize.OP:
        if value == "." and previous.is_closing and previous.value:
            return DOT
        if value in MATH and _is_operand_end(previous):
            return MATH[value]
        if value in COMPARATORS:
            return COMPARATOR
        return 0
    if leaf.kind == tokenize.STRING and previous.kind == tokenize.STRING:
        return STRING
    if leaf.kind != tokenize.NAME:
        return 0
    if value == "for":
        return COMPREHENSION
    if value == "if":
        # after a comprehension's `for` at the same depth: its filter; else a conditional expression
        i = leaves.index(leaf)
        seen_for = any(x.value == "for" and x.depth == leaf.depth and x.kind == tokenize.NAME for x in leaves[:i])
        return COMPREHENSION if seen_for else TERNARY
    if value == "else":
        return TERNARY
    if value == "is":
        return COMPARATOR
    if value == "in" and not (previous.kind == tokenize.NAME and previous.value == "not"):
        return COMPARATOR
    if value == "not" and leaves.index(leaf) + 1 < len(leaves) and leaves[leaves.index(leaf) + 1].value == "in":
        return COMPARATOR if previous.value != "is" else 0
    if value in ("and", "or"):
        return LOGIC
    return 0


# --------------------------------------------------------------------------------------
# Reading a line
# --------------------------------------------------------------------------------------


def _read(text: str) -> Line | None:
    """The leaves of one physical line (its indentation apart), or None when they cannot be read
    as one line: a backslash, a string or bracket of another line, a comment alone."""
    indent = text[: len(text) - len(text.lstrip())]
    body = text[len(indent):]
    if not body or body.startswith("#") or body.rstrip().endswith("\\"):
        return None
    leaves: list[Leaf] = []
    comment = ""
    end = 0
    fstring_depth = 0  # Python 3.12 on: an f-string comes as tokens of its parts, kept as one leaf
    fstring_start = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(body + "\n").readline):
            kind = token.type
            if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                continue
            if token.start[0] != 1 or token.end[0] != 1:
                return None  # a string over several lines
            if kind == FSTRING_START:
                fstring_depth += 1
                if fstring_depth == 1:
                    fstring_start = token.start[1]
                continue
            if fstring_depth:
                if kind == FSTRING_END:
                    fstring_depth -= 1
                    if not fstring_depth:
                        leaves.append(Leaf(tokenize.STRING, body[fstring_start:token.end[1]], body[end:fstring_start]))
                        end = token.end[1]
                continue
            if kind == tokenize.COMMENT:
                comment = token.string
                continue
            if kind == tokenize.ERRORTOKEN:
                return None
            leaves.append(Leaf(kind, token.string, body[end:token.start[1]]))
            end = token.end[1]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        if not leaves:
            return None  # brackets left open at the end are fine: the tokens came before the error
    if not leaves:
        return None
    leaves[0].prefix = ""
    return Line(leaves, indent, inside_brackets=False, comment=comment)


def _with_optional_parens(line: Line) -> Line:
    """A statement's value inside optional parentheses, where black puts them: after the last
    `=` of an assignment at depth 0, after `return`, around an `if`/`while` condition and a
    `for` loop's iterable."""
    leaves = line.leaves
    depth = 0
    start = None
    for i, leaf in enumerate(leaves):
        if leaf.kind == tokenize.OP and leaf.value in OPENING:
            depth += 1
        elif leaf.kind == tokenize.OP and leaf.value in CLOSING:
            depth -= 1
        elif depth == 0 and leaf.kind == tokenize.OP and leaf.value in AUGMENTED and leaf.value != ":=":
            start = i + 1
        elif depth == 0 and i == 0 and leaf.kind == tokenize.NAME and leaf.value in VALUE_KEYWORDS:
            start = 1
        elif depth == 0 and leaf.kind == tokenize.NAME and leaf.value == "in" and leaves[0].value == "for":
            start = i + 1
    if depth != 0 or start is None or start >= len(leaves):
        return line
    end = len(leaves)
    if leaves[0].value in ("if", "elif", "while", "for") or leaves[-1].value == ":":
        if leaves[-1].value != ":":
            return line
        end -= 1
    if end <= start:
        return line
    value = leaves[start:end]
    if value[0].value == "(" and _closes_at(value, 0) == len(value) - 1:
        return line  # already in parentheses of its own
    lpar = Leaf(tokenize.OP, "", "", optional=True)  # written, it takes the space before the value
    rpar = Leaf(tokenize.OP, "", "", optional=True, left=False)
    return Line([*leaves[:start], lpar, *value, rpar, *leaves[end:]], line.indent, False, line.comment)


def _closes_at(leaves: list[Leaf], start: int) -> int:
    depth = 0
    for i in range(start, len(leaves)):
        if leaves[i].kind == tokenize.OP and leaves[i].value in OPENING:
            depth += 1
        elif leaves[i].kind == tokenize.OP and leaves[i].value in CLOSING:
            depth -= 1
            if depth == 0:
                return i
    return -1


# --------------------------------------------------------------------------------------
# Splitting
# --------------------------------------------------------------------------------------


@dataclass
class _Split:
    head: Line
    body: Line
    tail: Line
    opening: Leaf  # the copies in `head` and `tail`
    closing: Leaf
    closing_index: int  # the closing bracket's position in the line split


class Breaker:
    def __init__(self, limit: int, indent_unit: str) -> None:
        self.limit = limit
        self.unit = indent_unit

    def fits(self, line: Line) -> bool:
        return len(line.render()) <= self.limit

    def transform(self, line: Line, force_parens: bool = False) -> list[Line]:
        """black's `transform_line`: the line as it is where it fits, else split and each part
        transformed again."""
        if self.fits(line) and not line.magic_trailing_comma and not line.should_split:
            return [line]
        before = line.render()
        for transform in ([self.delimiter_split, self.rhs] if line.inside_brackets else [self.rhs]):
            try:
                result = self._run(transform, line, force_parens, before)
            except CannotSplit:
                continue
            if transform == self.rhs and not force_parens and self._second_opinion_wanted(line, result):
                try:
                    second = self._run(transform, line, True, before)
                except CannotSplit:
                    second = None
                if second is not None and all(self.fits(new) for new in second):
                    result = second
            return result
        return [line]

    def _run(self, transform, line: Line, force_parens: bool, before: str) -> list[Line]:
        parts = transform(line, force_parens)
        if any(part.render() == before for part in parts):
            raise CannotSplit("the line came back unchanged")
        return [new for part in parts for new in self.transform(part, force_parens)]

    def _second_opinion_wanted(self, line: Line, result: list[Line]) -> bool:
        """black tries again with the optional parentheses written when they stayed unwritten
        and the first line is still too long."""
        optional = any(leaf.optional for leaf in line.leaves)
        written = any(leaf.optional and leaf.value for new in result for leaf in new.leaves)
        return optional and not written and not self.fits(result[0])

    # ---- the right-hand split -------------------------------------------------------

    def rhs(self, line: Line, force_parens: bool = False) -> list[Line]:
        """black's `_rhs`: split at the last bracket pair, gluing trailers that fit to the tail
        while the head then fits."""
        for omit in self._trailers_to_omit(line):
            lines = self._right_hand_split(line, omit, force_parens)
            if self.fits(lines[0]):
                return lines
        return self._right_hand_split(line, set(), force_parens)

    def _trailers_to_omit(self, line: Line):
        """black's `generate_trailers_to_omit`: growing sets of closing brackets (positions in
        the line) to glue to the tail, while the glued trailers fit."""
        omit: set[int] = set()
        if not line.magic_trailing_comma:
            yield set(omit)
        length = len(line.indent)
        opening: Leaf | None = None
        closing: int | None = None
        inner: set[int] = set()
        leaves = line.leaves
        for index in range(len(leaves) - 1, -1, -1):
            leaf = leaves[index]
            length += (len(leaf.prefix) if index else 0) + len(leaf.value)
            if length > self.limit:
                break
            if opening is not None:
                if leaf is opening:
                    opening = None
                elif leaf.is_closing:
                    if index and leaves[index - 1].value == ",":
                        break  # a bracket pair with a trailing comma must explode
                    inner.add(index)
            elif leaf.is_closing:
                if index and leaves[index - 1].is_opening:
                    inner.add(index)  # empty brackets: omitted only with another pair
                    continue
                if closing is not None:
                    omit.add(closing)
                    omit |= inner
                    inner.clear()
                    yield set(omit)
                if index and leaves[index - 1].value == ",":
                    break
                if leaf.value:
                    opening = leaf.opening
                    closing = index

    def _first_split(self, line: Line, omit: set[int]) -> _Split:
        """black's `_first_right_hand_split`: head, body and tail around the last bracket pair
        not in `omit`, as new lines of copied leaves."""
        leaves = line.leaves
        tail: list[int] = []
        body: list[int] = []
        head: list[int] = []
        current = tail
        opening: Leaf | None = None
        closing_index = -1
        for index in range(len(leaves) - 1, -1, -1):
            leaf = leaves[index]
            if current is body and leaf is opening:
                current = head if body else tail
            current.append(index)
            if current is tail and leaf.is_closing and index not in omit:
                opening, closing_index = leaf.opening, index
                current = body
        if opening is None or not head:
            raise CannotSplit("no brackets")
        copies = [leaf.copy() for leaf in leaves]
        head_line = Line(_fresh([copies[i] for i in reversed(head)]), line.indent, False)
        body_line = Line(_fresh([copies[i] for i in reversed(body)]), line.indent + self.unit, True)
        tail_line = Line(_fresh([copies[i] for i in reversed(tail)]), line.indent, False, comment=line.comment)
        if body_line.leaves and (opening.value or opening.optional):
            top = max(_priorities(body_line, exclude_last=True), default=0)
            trailing_comma = body_line.leaves[-1].value == ","
            # black's `should_split_line`: a display's elements, or a tuple in optional parentheses
            if top == COMMA and (trailing_comma or opening.optional or _is_display(opening, leaves)):
                body_line.should_split = True
        if not body:
            tail_length = len(tail_line.render(comment=False).strip())
            if tail_length == 0:
                raise CannotSplit("the same line")
            if tail_length < 3:
                raise CannotSplit("an empty body to save a few characters")
        return _Split(head_line, body_line, tail_line, head_line.leaves[-1], copies[closing_index], closing_index)

    def _right_hand_split(self, line: Line, omit: set[int], force_parens: bool) -> list[Line]:
        """black's `_maybe_split_omitting_optional_parens`."""
        split = self._first_split(line, omit)
        if split.opening.optional and not force_parens and self._can_omit_optional_parens(split):
            wider = omit | {split.closing_index}
            try:
                without = self._first_split(line, wider)
                if _prefer_without_parens(without, split, self):
                    return self._right_hand_split(line, wider, force_parens)
            except CannotSplit:
                if not _can_be_split(split.body) and not self.fits(split.body):
                    raise
        if split.opening.optional:
            split.opening.value = "("
            split.closing.value = ")"
            split.opening.prefix = " " if len(split.head.leaves) > 1 else ""
        return [part for part in (split.head, split.body, split.tail) if part.leaves]

    def _can_omit_optional_parens(self, split: _Split) -> bool:
        """black's `can_omit_invisible_parens`."""
        body = split.body
        if not body.delimiters:
            return True
        priorities = list(body.delimiters.values())
        top = max(priorities)
        if priorities.count(top) > 1:
            return False
        if top == DOT:
            return True
        leaves = body.leaves
        if len(leaves) < 2:
            return False
        first, second = leaves[0], leaves[1]
        if first.is_opening and not second.is_closer and self._can_omit_opening(body, first):
            return True
        last, penultimate = leaves[-1], leaves[-2]
        if last.value in (")", "}") or (last.value == "]" and last.opening is not None and
                                        _is_display(last.opening, leaves)):
            if penultimate.is_opening:
                return False
            if self._can_omit_closing(body, last):
                return True
        return False

    def _can_omit_opening(self, line: Line, first: Leaf) -> bool:
        remainder = False
        length = len(line.indent)
        for leaf in line.leaves:
            if leaf.is_closing and leaf.opening is first:
                remainder = True
            if remainder:
                length += len(leaf.prefix) + len(leaf.value)
                if length > self.limit:
                    return False
                if leaf.is_opening:
                    remainder = False
        return True

    def _can_omit_closing(self, line: Line, last: Leaf) -> bool:
        length = len(line.indent)
        seen_other = False
        for index, leaf in enumerate(line.leaves):
            length += (len(leaf.prefix) if index else 0) + len(leaf.value)
            if leaf is last.opening:
                if seen_other or length <= self.limit:
                    return True
            elif leaf.is_opening:
                seen_other = True
        return False

    # ---- the delimiter split --------------------------------------------------------

    def delimiter_split(self, line: Line, force_parens: bool = False) -> list[Line]:
        """black's `delimiter_split`: one line per element between the delimiters of highest
        priority, with a trailing comma after a split at commas."""
        priorities = _priorities(line, exclude_last=True)
        if not priorities:
            raise CannotSplit("no delimiters")
        top = max(priorities)
        if top == DOT and priorities.count(DOT) == 1:
            raise CannotSplit("a single attribute split from its owner")
        lines: list[Line] = []
        current: list[Leaf] = []
        for leaf in line.leaves:
            current.append(leaf.copy())
            if line.delimiters.get(id(leaf)) == top:
                lines.append(Line(_fresh(current), line.indent, line.inside_brackets))
                current = []
        if current:
            if top == COMMA and current[-1].value != ",":
                current.append(Leaf(tokenize.OP, ",", ""))
            lines.append(Line(_fresh(current), line.indent, line.inside_brackets))
        lines[-1].comment = line.comment
        return lines


def _priorities(line: Line, exclude_last: bool = False) -> list[int]:
    last = id(line.leaves[-1]) if exclude_last and line.leaves else None
    return [priority for key, priority in line.delimiters.items() if key != last]


def _prefer_without_parens(without: _Split, split: _Split, breaker: Breaker) -> bool:
    """black's `_prefer_split_rhs_oop_over_rhs`, for the statements a fix writes."""
    head = split.head.leaves
    if not (len(head) >= 2 and head[-2].value in AUGMENTED):
        return True  # the split is not right after `=` (or `+=`, as ruff format reads it)
    if not any(leaf.is_opening or leaf.is_closer for leaf in head[:-1] if leaf.value):
        return True  # no brackets in the assignment's target
    if len(split.head.render()) > breaker.limit - 1:
        return True
    for leaf in reversed(without.head.leaves):
        if leaf.value == "=":
            break
        if leaf.is_closer and leaf.value:
            return True
    return any(leaf.value == "=" for leaf in without.head.leaves) and breaker.fits(without.head)


def _can_be_split(line: Line) -> bool:
    """black's `can_be_split`: False where the line surely cannot be split."""
    leaves = line.leaves
    if len(leaves) < 2:
        return False
    if leaves[0].kind == tokenize.STRING and leaves[1].value == ".":
        calls = dots = 0
        following = leaves[-1]
        for leaf in leaves[-2::-1]:
            if leaf.is_opening:
                if not following.is_closer:
                    return False
                calls += 1
            elif leaf.value == ".":
                dots += 1
            elif leaf.kind == tokenize.NAME:
                if not (following.value == "." or following.is_opening):
                    return False
            elif not leaf.is_closer:
                return False
            if dots > 1 and calls > 1:
                return False
            following = leaf
    return True


def _fresh(leaves: list[Leaf]) -> list[Leaf]:
    """Leaves starting a new line: the first loses the whitespace before it."""
    if leaves:
        leaves[0].prefix = ""
    return leaves


# --------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------


def break_line(text: str, limit: int, indent_unit: str = "    ", inside_brackets: bool = False,
               statement: bool = True) -> list[str]:
    """`text` (one physical line without its line break) as the lines black would write for it
    at `limit` characters; `[text]` when it fits or cannot be read. `inside_brackets`: the line
    continues a bracket opened on an earlier line; `statement`: it holds a whole statement."""
    if len(text) <= limit and "," not in text:
        return [text]  # it fits, and has no magic trailing comma
    line = _read(text)
    if line is None:
        return [text]
    line.inside_brackets = inside_brackets
    if statement and not inside_brackets:
        line = _with_optional_parens(line)
    line = Line(line.leaves, line.indent, line.inside_brackets, line.comment)
    try:
        lines = Breaker(limit, indent_unit).transform(line)
    except (RecursionError, ValueError, IndexError):  # a shape this module does not know: the fix stays on one line
        return [text]
    rendered = [new.render() for new in lines]
    return [new for new in rendered if new.strip()] or [text]
