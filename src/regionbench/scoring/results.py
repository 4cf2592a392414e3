"""The readers of a method's output, each format's checks in one place (docs/scoring.md): the
tasks check what they read against the truth.

- COCO results files, read and checked as pycocotools' ``loadRes`` takes them, one detection at
  a time (``ResultsItems``, ``Checker``): a list of ``{image_id, category_id | label,
  segmentation | bbox, score}``, polygons made RLE, every RLE checked to make its image's mask;
- label maps (``read_label_map``: single-channel PNGs), BSDS's ``.mat`` predictions
  (``bsds_mat``: a ``ucm2`` or a cell ``segs``), a panoptic run's JSON and PNG folder
  (``panoptic_files``), ImageCLEF run files (``read_imageclef_run``), and the Parquet or CSV
  tables of the region and image tasks (``read_table``, ``read_text``), every bad cell a problem
  with its row (``fail``)."""

from __future__ import annotations

import functools
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd

from regionbench.core import errors, jsondepth, numbers
from regionbench.scoring import scope
from regionbench.scoring.errors import TaskError
from regionbench.scoring.measures.average_precision import InstancesError, OutsideImages, engine_masks


def read_results(
    path: Path, truth: dict[str, Any], names: Mapping[str, int], others: Collection[int] = (), strict: bool = False
) -> list[dict[str, Any]]:
    """The detections of a COCO results file, checked against ``truth`` (``Checker``; ``strict``:
    refusing those of categories the truth lacks); raises ``OutsideImages`` where detections lie
    on ``others`` (images of the release the truth leaves out), else ``InstancesError`` with one
    line per problem (the first ten)."""
    return Checker(truth_header(truth), names, others, strict=strict).read(path, stream_items(path))


def keyed_once(twice: list[tuple[str, dict[str, Any]]]) -> type[dict[str, Any]]:
    """A mapping type for ijson (``map_type``) that notes in ``twice`` every key an object gives
    again, with the object, where ``json`` and ijson keep the last value without a word. It notes
    rather than raises: ijson's C parser cannot carry an exception out of a mapping, and it builds
    items ahead of the one it hands over. Pickled as a plain dict."""

    class KeyedOnce(dict[str, Any]):
        __slots__ = ()

        def __setitem__(self, key: str, value: Any) -> None:
            if key in self:
                twice.append((key, self))
            super().__setitem__(key, value)

        def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
            return dict, (dict(self),)

    return KeyedOnce


def _key_twice(item: Any, twice: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The key given twice in ``item`` or an object inside it (``keyed_once`` noted them), else None."""
    noted = {id(obj): key for key, obj in twice}
    stack = [item]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if id(value) in noted:
                return noted[id(value)]
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def stream_items(path: Path) -> Iterator[Any]:
    """The items of a COCO results file (a JSON list), read one at a time (``ResultsItems``, one
    pass)."""
    return iter(ResultsItems(path))


class ResultsItems:
    """The items of a COCO results file (a JSON list), read one at a time (ijson's C parser):
    memory by the item, not the file, and the file opened once whatever the number of passes.

    The file is opened and its start checked here (``InstancesError`` in one line where it is no
    file, not UTF-8, not a list, or nested too deep); the first pass streams it. Where ``passes``
    > 1 (a run scored against several truths), the first pass also keeps each item on an
    anonymous spill file, which every later pass reads."""

    def __init__(self, path: Path, passes: int = 1) -> None:
        self.path, self.passes = path, passes
        self._spill: BinaryIO | None = None
        self._spilled = False  # every item of the file on the spill
        if problem := errors.file_problem(path, "a COCO results file"):
            raise InstancesError(f"{path}: {problem}")
        try:
            self._file: BinaryIO | None = path.open("rb")
            self._check_start(self._file)
        except OSError as exc:
            raise InstancesError(f"{path}: unreadable ({exc.strerror})") from None
        except InstancesError:
            self.close()
            raise

    def _check_start(self, f: BinaryIO) -> None:
        if said := _encoding_problem(f.read(4)):
            raise InstancesError(f"{self.path}: {said}")
        f.seek(0)
        while (chunk := f.read(1 << 16)) and not chunk.strip(b" \t\r\n"):  # whitespace before the list
            pass
        if chunk.lstrip(b" \t\r\n")[:1] != b"[":
            raise InstancesError(f"{self.path}: a COCO results file is a JSON list of detections")
        f.seek(0)
        if jsondepth.deeper_than(f, MAX_DEPTH):  # a streaming parser's memory grows with depth squared
            raise InstancesError(
                f"{self.path}: arrays and objects nested more than {MAX_DEPTH} deep; a COCO results file is a "
                "list of detections, whose deepest part, a polygon, is a list in a list"
            )
        f.seek(0)

    def __iter__(self) -> Iterator[Any]:
        if self._file is not None:
            return self._streamed(self._file)
        if self._spill is None or not self._spilled:
            raise RuntimeError(f"{self.path}: its items were read once; ask for the passes wanted (passes=)")
        return self._replayed(self._spill)

    def _streamed(self, f: BinaryIO) -> Iterator[Any]:
        import ijson

        self._file = None  # one pass of the file
        spill = self._spill = tempfile.TemporaryFile(prefix="regionbench-results-") if self.passes > 1 else None  # noqa: SIM115  (closed by close())
        twice: list[tuple[str, dict[str, Any]]] = []
        try:
            with f:
                for n, item in enumerate(ijson.items(f, "item", use_float=True, map_type=keyed_once(twice))):
                    if twice and (key := _key_twice(item, twice)) is not None:
                        raise InstancesError(
                            f"{self.path}: detection {n}: key {key!r} given twice in one object (JSON readers "
                            "keep the last one without a word); write each key once"
                        )
                    if spill is not None:
                        pickle.dump(item, spill, pickle.HIGHEST_PROTOCOL)
                    yield item
            self._spilled = True
        except ijson.JSONError as exc:
            said = errors.streamed_json_problem(
                exc, "write the results file as UTF-8 JSON", "write finite scores, e.g. json.dump(..., allow_nan=False)"
            )
            raise InstancesError(f"{self.path}: {said}") from None
        except OSError as exc:
            raise InstancesError(f"{self.path}: unreadable ({exc.strerror})") from None

    @staticmethod
    def _replayed(spill: BinaryIO) -> Iterator[Any]:
        spill.seek(0)
        while True:
            try:
                yield pickle.load(spill)
            except EOFError:
                return

    def close(self) -> None:
        """The results file and the spill closed (the spill is then gone)."""
        for f in (self._file, self._spill):
            if f is not None:
                f.close()
        self._file = self._spill = None


MAX_DEPTH = 32  # levels a results file may nest: a detection's polygons are 4 deep


def _encoding_problem(head: bytes) -> str | None:
    """What the first bytes of a JSON file say of its encoding where it is not plain UTF-8 (JSON's
    own, RFC 8259): a byte-order mark, or UTF-16/32 (NUL bytes among the first four)."""
    if head.startswith(b"\xef\xbb\xbf"):
        return "begins with a UTF-8 byte-order mark; write it without one (encoding='utf-8', not 'utf-8-sig')"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        return "is UTF-16 or UTF-32 text; write it as UTF-8 (JSON's encoding)"
    return None


def truth_header(truth: dict[str, Any]) -> dict[str, Any]:
    """What checking detections needs of a truth: its ``images`` and ``categories``."""
    return {"images": truth["images"], "categories": truth["categories"]}


def _not_an_id(key: str, value: object, required: bool) -> str | None:
    """What is wrong with ``value`` as an id (``key``), or None: an id is a JSON integer, as COCO
    gives them. Text (``"213"``) and numbers with a decimal point (``213.0``) are named as what
    they are, not looked up and reported missing."""
    if value is None and not required:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, str):
        return f'{key} {value!r} is text; write ids as JSON integers ({key}: 213, not "213")'
    if isinstance(value, float):
        return f"{key} {value!r} is a decimal number; write ids as JSON integers ({key}: 213, not 213.0)"
    if value is None:
        return f"{key} is missing; every detection names its image by id"
    return f"{key} {value!r} is not an id; write ids as JSON integers"


class Checker:
    """Detections checked one at a time against a truth's images and categories (``header``:
    ``truth_header``), as pycocotools' ``loadRes`` would take them and in the same pass:

    - every item an object with a known ``image_id``; ``others`` (images of the release the
      truth leaves out) are counted (``OutsideImages``), not checked;
    - a category of the truth by ``category_id`` (its id in the truth) or ``label`` (``names``:
      a name -> its id; ``category_names``), the two agreeing where both are given; a detection
      whose ``category_id`` alone names a category the truth lacks is left out and counted by id
      (``absent``), as COCOeval leaves it out (it evaluates the truth's categories only), or,
      ``strict``, refused (``keep_absent``: taken and counted, for TIDE, which counts them);
    - a finite ``score``; a ``segmentation`` (RLE of the image's size, or polygons inside it,
      made RLE) or a ``bbox`` (four numbers);
    - its ``area`` as ``loadRes`` states it: the box's where the run's first detection has a
      box, else the mask's (measured here, where the mask is decoded anyway); a box from the
      mask where it has none (``boxes``: for every detection, else only where the area needs it).

    ``take`` returns the detection (``None`` when refused), ``finish`` raises the problems."""

    def __init__(
        self,
        header: dict[str, Any],
        names: Mapping[str, int],
        others: Collection[int] = (),
        boxes: bool = True,
        strict: bool = False,
        keep_absent: bool = False,
    ) -> None:
        self.boxes, self.strict = boxes, strict  # boxes: for every detection (scoring boxes, or drawing them)
        self.keep_absent = keep_absent  # TIDE, as tidecv, counts them: a class with detections and no instance
        self.absent = Counter[int]()  # detections left out, by the category id the truth lacks
        self.sizes = {e["id"]: (e["height"], e["width"]) for e in header["images"]}
        self.label_of = {c["id"]: c["name"] for c in header["categories"]}
        self.names, self.others = names, others
        self.problems: list[str] = []
        self.outside = Counter[int]()
        self.box_areas: bool | None = None  # loadRes: the first detection's kind decides for all

    def take(self, n: int, item: Any) -> dict[str, Any] | None:
        """Detection ``n`` (its position in the file) checked: the detection the engine reads."""
        where = f"detection {n}"
        if not isinstance(item, dict):
            self.problems.append(f"{where}: not a JSON object")
            return None
        for key in ("image_id", "category_id"):
            if (said := _not_an_id(key, item.get(key), required=key == "image_id")) is not None:
                self.problems.append(f"{where}: {said}")
                return None
        image: int = item["image_id"]
        if image in self.others:
            self.outside[image] += 1
            return None
        if image not in self.sizes:
            self.problems.append(f"{where}: image_id {image!r} is no image of the release")
            return None
        given = item.get("category_id")
        if (
            not self.strict
            and "label" not in item
            and isinstance(given, int)
            and not isinstance(given, bool)
            and given not in self.label_of
        ):
            self.absent[given] += 1
            if not self.keep_absent:
                return None
            category, problem = int(given), None  # checked as the others are: TIDE counts it
        else:
            category, problem = _category(item, self.label_of, self.names)
        if problem:
            self.problems.append(f"{where}: {problem}")
            return None
        score = numbers.json_number(item.get("score"))
        if score is None:
            self.problems.append(f"{where}: score {item.get('score')!r} is not a finite number")
            return None
        try:
            shape = detection_shape(item, *self.sizes[image])
        except (ValueError, TypeError) as exc:
            self.problems.append(f"{where}: {errors.first_line(exc)}")
            return None
        if self.box_areas is None:
            self.box_areas = "bbox" in shape
        detection: dict[str, Any] = {"image_id": image, "category_id": category, "score": score} | shape
        area = detection.pop("mask_area", None)
        if self.box_areas or area is None or self.boxes:
            if "bbox" not in detection:  # then it has a mask
                detection["bbox"] = _mask_box(detection["segmentation"])
            box = detection["bbox"]
            area = box[2] * box[3] if self.box_areas or area is None else area
        detection["area"] = area
        return detection

    def read(self, path: Path, items: Iterable[Any]) -> list[dict[str, Any]]:
        """Every item of the results file ``path`` taken in order, then its problems raised
        (``finish``): the detections kept."""
        return [d for _, d in self.checked(path, items)]

    def checked(self, path: Path, items: Iterable[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(position in the file, detection) of each item of ``path`` kept (``take``), in order;
        then its problems raised (``finish``)."""
        for n, item in enumerate(items):
            if (d := self.take(n, item)) is not None:
                yield n, d
        self.finish(path)

    def finish(self, path: Path) -> None:
        """Raise what was found: ``OutsideImages``, else ``InstancesError`` (the first ten problems)."""
        if self.outside:
            raise OutsideImages(sum(self.outside.values()), len(self.outside))
        if self.problems:
            more = f" (and {len(self.problems) - 10} more)" if len(self.problems) > 10 else ""
            raise InstancesError(f"{path}: " + f"; {path}: ".join(self.problems[:10]) + more)


def check_results(
    path: Path, items: Iterable[Any], truth: dict[str, Any], names: Mapping[str, int]
) -> list[dict[str, Any]]:
    """``read_results`` of the ``items`` of the results file ``path`` (``Checker.read``)."""
    return Checker(truth_header(truth), names).read(path, items)


def _mask_box(rle: dict[str, Any]) -> list[float]:
    return [float(v) for v in _masks().toBbox(rle)]


def decoded_runs(rle: dict[str, Any]) -> list[int]:
    """The runs faster-coco-eval decodes from a compressed RLE (``counts`` bytes) of ``size``
    (h, w), checked to make its mask: non-negative and h·w pixels in all. Counts that do not (a
    string cut short, a negative run, runs past the last pixel or stopping short) raise a
    ``ValueError`` here: the engine's IoU would loop for ever on them."""
    height, width = rle["size"]
    try:
        runs: list[int] = engine_masks().toUncompressedRLE([rle])[0]["counts"]
    except (ValueError, RuntimeError) as exc:  # cut short, or past the last pixel
        reason = str(exc).rstrip(".")
    else:
        if sum(runs) == height * width:
            return runs
        reason = f"its runs make {sum(runs)} pixels, not {height * width}"
    raise ValueError(f"RLE counts do not make the {width}x{height} image's mask ({reason}); encode it with pycocotools")


@functools.cache
def _masks() -> Any:
    """pycocotools' mask module, imported once (a detection at a time, an import costs as much as
    its checks)."""
    from pycocotools import mask

    return mask


def detection_shape(item: dict[str, Any], height: int, width: int) -> dict[str, Any]:
    """A detection's ``segmentation`` (an RLE of the image's size, or polygons inside it, as RLE,
    with its ``mask_area``) and ``bbox`` (four numbers), at least one of them; a ``ValueError``
    says what is wrong."""
    coco_mask = _masks()
    found: dict[str, Any] = {}
    segmentation = item.get("segmentation")
    if isinstance(segmentation, dict):
        size = segmentation.get("size")
        if list(size or []) != [height, width]:
            raise ValueError(f"RLE size {size!r} differs from the image's [{height}, {width}]")
        counts = segmentation.get("counts")
        if isinstance(counts, list):
            if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
                raise ValueError("RLE counts must be non-negative integers")
            if sum(counts) != height * width:
                raise ValueError(f"RLE counts cover {sum(counts)} pixels, the {width}x{height} image {height * width}")
        elif not isinstance(counts, str):
            raise ValueError("RLE counts are neither a string nor a list of integers")
        rle = {"size": [height, width], "counts": counts.encode() if isinstance(counts, str) else counts}
        if isinstance(counts, list):
            rle = coco_mask.frPyObjects(rle, height, width)
        runs = counts if isinstance(counts, list) else decoded_runs(rle)
        found["mask_area"] = sum(runs[1::2])  # the runs alternate background and mask, background first
        found["segmentation"] = rle
    elif isinstance(segmentation, list):
        flat = [v for part in segmentation for v in (part if isinstance(part, list) else [None])]
        if not flat or any(numbers.json_number(v) is None for v in flat):
            raise ValueError("polygons must be lists of finite numbers")
        if any(len(part) < 6 or len(part) % 2 for part in segmentation):
            raise ValueError("a polygon is x, y pairs of at least 3 points (6 numbers, an even count)")
        xs, ys = np.array(flat[0::2], dtype=float), np.array(flat[1::2], dtype=float)
        if xs.min() < 0 or ys.min() < 0 or xs.max() > width or ys.max() > height:
            raise ValueError(f"a polygon leaves the {width}x{height} image")
        found["segmentation"] = coco_mask.merge(coco_mask.frPyObjects(segmentation, height, width))
        found["mask_area"] = int(coco_mask.area(found["segmentation"]))
    elif segmentation is not None:
        raise ValueError("segmentation is neither an RLE nor polygons")
    box = item.get("bbox")
    if box is not None:
        if not (isinstance(box, list) and len(box) == 4 and all(numbers.json_number(v) is not None for v in box)):
            raise ValueError(f"bbox {box!r} is not four numbers")
        if box[2] < 0 or box[3] < 0:
            raise ValueError(f"bbox {box!r} has a negative width or height (COCO's box is x, y, width, height)")
        found["bbox"] = [float(v) for v in box]
    if not found:
        raise ValueError("neither a segmentation nor a bbox")
    return found


def _category(item: dict[str, Any], label_of: Mapping[int, str], names: Mapping[str, int]) -> tuple[int, str | None]:
    """A detection's category id from its ``category_id`` or ``label`` (both: they must agree),
    or the reason there is none."""
    given, label = item.get("category_id"), item.get("label")
    if given is None and label is None:
        return 0, "no category_id or label"
    by_id = given if isinstance(given, int) and not isinstance(given, bool) and given in label_of else None
    if given is not None and by_id is None:
        return 0, (
            f"category_id {given!r} is not a category of the truth (give its id in the source file, or a label; "
            "without --strict a detection whose category_id alone names a category the truth lacks is left out)"
        )
    by_label = names.get(label) if isinstance(label, str) else None
    if label is not None and by_label is None:
        return 0, f"label {label!r} names no category of the truth (give a label of the release or the source's name)"
    if by_id is not None and by_label is not None and by_id != by_label:
        return 0, (
            f"category_id {by_id} ({label_of[by_id]}) and label {label!r} ({label_of[by_label]}) disagree; give one"
        )
    return int(by_id if by_id is not None else by_label), None  # type: ignore[arg-type]


MAX_PROBLEMS = 20  # problems of a file said one by one; the rest counted


def fail(path: Path, problems: list[str]) -> None:
    """The ``problems`` found in ``path`` raised as one ``TaskError``, a line each (the first
    ``MAX_PROBLEMS``, then how many more); nothing where there are none."""
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = f"\n{path}: ... and {len(problems) - MAX_PROBLEMS} more problems" if len(problems) > MAX_PROBLEMS else ""
        raise TaskError("\n".join(f"{path}: {p}" for p in shown) + more)


def _strict(value: object, parse: Callable[[str, str], float], what: str) -> float:
    """One cell as ``parse`` reads it: strings strictly (``regionbench.core.numbers``); numbers from
    Parquet as they are, if finite (and whole and not negative for an id)."""
    if isinstance(value, str):
        return parse(value, what)
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        number = float(value)
        if not np.isfinite(number):
            raise ValueError(f"{what} {value!r} is not a finite number")
        if parse is numbers.parse_id:
            # Integers as they are (a float would round ids beyond 2**53), in the range ids take.
            whole = int(value) if isinstance(value, (int, np.integer)) else int(number) if number.is_integer() else -1
            if not 0 <= whole <= numbers.MAX_ID:
                raise ValueError(f"{what} {value!r} is not an id (a whole number from 0 to {numbers.MAX_ID})")
            return whole
        return number
    raise ValueError(f"{what} is empty")


def read_table(
    path: Path,
    required: list[str],
    optional: list[str],
    ids: tuple[str, ...] = (),
    values: tuple[str, ...] | None = (),
) -> pd.DataFrame:
    """A Parquet or CSV predictions file with the ``required`` columns; the ``ids`` and ``values``
    columns (``None``: every column but ``ids``) parsed strictly (ASCII digits, finite numbers),
    every bad cell a problem with its row. CSV cells are read as text, so nothing is guessed
    (``NA`` stays a label, ``1_0`` no number)."""
    path = Path(path)
    if problem := errors.file_problem(path, "a predictions file"):
        raise TaskError(f"{path}: {problem}")
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        elif path.suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        else:
            raise TaskError(f"{path}: predictions must be .parquet or .csv")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        if isinstance(exc, TaskError):
            raise
        raise TaskError(f"{path}: unreadable as {path.suffix[1:]} ({errors.first_line(exc)})") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise TaskError(f"{path}: columns {missing} missing; expected {required} and optionally {optional}")
    if values is None:
        values = tuple(c for c in frame.columns if c not in ids)
    problems: list[str] = []
    parsed: dict[str, tuple[list[float], str]] = {}
    for columns, parse, dtype in ((ids, numbers.parse_id, "int64"), (values, numbers.parse_number, "float64")):
        for name in (c for c in columns if c in frame.columns):
            cells = []
            for row, value in enumerate(frame[name].tolist()):
                try:
                    cells.append(_strict(value, parse, name))
                except ValueError as exc:
                    if len(problems) < MAX_PROBLEMS:
                        problems.append(f"row {row + 2}: {exc}")
            parsed[name] = (cells, dtype)
    fail(path, problems)
    for name, (cells, dtype) in parsed.items():
        frame[name] = np.array(cells, dtype=dtype)
    for name in ("label", "annotator"):
        if name in frame.columns:
            frame[name] = frame[name].map(lambda v: None if v is None or v == "" else str(v))
    return frame


def read_text(path: Path) -> str:
    """A run or category file's UTF-8 text; a missing file or other bytes are a ``TaskError``."""
    if problem := errors.file_problem(path, "a run or category file"):
        raise TaskError(f"{path}: {problem}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_label_map(path: Path, shape: tuple[int, int], dtype: type | None = np.int64) -> np.ndarray:
    """A label map PNG: one channel of 8 or 16 bits (mode L, P, I;16 or I), the image's size, as
    ``dtype`` (None: the file's own, the smallest)."""
    from PIL import Image  # the client install has it, yet only a mask task needs it

    try:
        with Image.open(path) as im:
            if im.format != "PNG" or im.mode not in ("L", "P", "I;16", "I;16B", "I"):
                raise TaskError(
                    f"{path}: a {im.format} in mode {im.mode}; a label map is a single-channel 8- or 16-bit PNG"
                )
            values = np.asarray(im)
            values = values.astype(dtype) if dtype is not None else values
    except OSError as exc:
        raise TaskError(f"{path}: unreadable ({errors.first_line(exc)}); write the label map as a PNG") from None
    if values.shape != shape:
        raise TaskError(f"{path}: {values.shape[1]}x{values.shape[0]} differs from its image's {shape[1]}x{shape[0]}")
    return values


def bsds_mat(path: Path, shape: tuple[int, int]) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """A BSDS prediction ``.mat`` of an image of ``shape``: its ``ucm2`` (double size) and no
    segmentation, or None and its cell ``segs``; anything else one line naming the file."""
    from regionbench.io.matlab import read_mat  # the build extra: BSDS's .mat files

    try:
        variables = read_mat(path)
    except ValueError as exc:
        raise TaskError(f"{path}: unreadable MAT file ({errors.first_line(exc)})") from None
    if "ucm2" in variables:
        ucm2 = np.asarray(variables["ucm2"], dtype=np.float64)
        if ucm2.shape != (2 * shape[0] + 1, 2 * shape[1] + 1):
            raise TaskError(f"{path}: ucm2 of {ucm2.shape} is not the double size of the image's {shape}")
        return ucm2, []
    if "segs" in variables:
        cell = np.asarray(variables["segs"], dtype=object).ravel()
        maps = [np.asarray(m).astype(np.int64) for m in cell]
        if any(m.shape != shape for m in maps):
            raise TaskError(f"{path}: a segs entry differs from the image's size {shape}")
        return None, maps
    raise TaskError(f"{path}: neither a segs cell nor a ucm2 (found {', '.join(sorted(variables)) or 'nothing'})")


def panoptic_files(predictions: Path) -> tuple[Path, Path]:
    """The JSON file and the PNG folder of a panoptic run ``predictions``: the one JSON of a folder (its
    PNGs in the folder named as it, else beside it), or the JSON given (its PNGs likewise)."""
    if predictions.is_dir():
        found = sorted(predictions.glob("*.json"))
        if len(found) != 1:
            raise TaskError(
                f"{predictions}: {len(found)} JSON files; a panoptic run is one JSON of segments_info and its PNGs"
            )
        return found[0], found[0].with_suffix("") if found[0].with_suffix("").is_dir() else predictions
    if not predictions.is_file():
        raise TaskError(
            f"{predictions}: {errors.file_problem(predictions, 'a COCO panoptic results JSON') or 'not a file'}"
        )
    folder = predictions.with_suffix("")
    return predictions, folder if folder.is_dir() else predictions.parent


def read_imageclef_run(
    path: Path, images: list[int], concepts: list[str], within: scope.Scope | None = None, others: Collection[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence and binary arrays (image x concept, images in ``images`` order) of a run file.

    Each line: ``<image id> <confidence> <binary>`` for every concept, separated by single
    spaces; confidences are numbers in [0, 1], binaries 0 or 1; every scored image exactly
    once. Lines of ``others`` (images the scored side ``within`` leaves out) are refused in one
    line.
    """
    path = Path(path)
    index = {image: n for n, image in enumerate(images)}
    confidence = np.zeros((len(images), len(concepts)))
    binary = np.zeros((len(images), len(concepts)), dtype=bool)
    seen: dict[int, int] = {}
    problems, outside = [], set()
    fields_expected = 1 + 2 * len(concepts)
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    for number, line in enumerate(lines, start=1):
        where = f"line {number}"
        fields = line.split(" ")
        if len(fields) != fields_expected:
            problems.append(
                f"{where}: {len(fields)} fields, expected {fields_expected} (image id + confidence binary per each of {len(concepts)} concepts, single spaces)"
            )
            continue
        name = fields[0].removesuffix(".jpg")
        if numbers.is_id(name) and int(name) in others:
            outside.add(int(name))
            continue
        if not numbers.is_id(name) or int(name) not in index:
            problems.append(f"{where}: image {fields[0]!r} is no scored image of the subset")
            continue
        image = int(name)
        if image in seen:
            problems.append(f"{where}: image {image} already given on line {seen[image]}")
            continue
        seen[image] = number
        if problem := _concept_fields(fields[1:], concepts, confidence[index[image]], binary[index[image]]):
            problems.append(f"{where}: {problem}")
    if outside and within is not None:
        raise within.refuse(path, len(outside), f"lines on {len(outside)} images")
    missing = [i for i in images if i not in seen]
    if missing:
        problems.append(f"{len(missing)} scored images have no line, e.g. {missing[0]}")
    fail(path, problems)
    return confidence, binary


def _concept_fields(fields: list[str], concepts: list[str], confidence: np.ndarray, binary: np.ndarray) -> str | None:
    """A line's ``confidence binary`` pairs, one per concept, into the image's rows of
    ``confidence`` and ``binary``; the first bad pair's problem, else None."""
    for c, concept in enumerate(concepts):
        raw_conf, raw_bin = fields[2 * c], fields[2 * c + 1]
        try:
            value = numbers.parse_number(raw_conf)
        except ValueError:
            value = float("nan")
        if not 0.0 <= value <= 1.0:
            return f"confidence {raw_conf!r} for concept {c} ({concept}) is not a number in [0, 1]"
        if raw_bin not in ("0", "1"):
            return f"binary {raw_bin!r} for concept {c} ({concept}) is not 0 or 1"
        confidence[c], binary[c] = value, raw_bin == "1"
    return None
