"""The filesystem object store: the ObjectStore contract on a local directory, atomic puts, safe keys."""

import os
import threading
from pathlib import Path

import pytest

from flamewatch.storage.errors import ObjectNotFound, StorageError
from flamewatch.storage.filesystem import FilesystemObjectStore
from flamewatch.storage.objstore import FilesystemConfig, open_object_store


@pytest.fixture
def store(tmp_path: Path) -> FilesystemObjectStore:
    return FilesystemObjectStore(tmp_path / "objects")


def test_put_then_get_returns_the_bytes(store: FilesystemObjectStore) -> None:
    store.put("t1/blocks/0/2024/01/02/a.parquet", b"block")
    assert store.get("t1/blocks/0/2024/01/02/a.parquet") == b"block"


def test_put_replaces_an_existing_object(store: FilesystemObjectStore) -> None:
    store.put("k", b"old")
    store.put("k", b"new")
    assert store.get("k") == b"new"


def test_get_of_a_missing_key_raises_object_not_found(store: FilesystemObjectStore) -> None:
    with pytest.raises(ObjectNotFound, match="missing/key"):
        store.get("missing/key")


def test_get_of_a_folder_raises_object_not_found(store: FilesystemObjectStore) -> None:
    store.put("a/b", b"x")
    with pytest.raises(ObjectNotFound):
        store.get("a")


def test_list_is_recursive_in_key_order_with_sizes(store: FilesystemObjectStore) -> None:
    for key in ["t/b/2", "t/a.x", "t/a/1", "u/z"]:
        store.put(key, key.encode())
    infos = list(store.list("t/"))
    assert [i.key for i in infos] == ["t/a.x", "t/a/1", "t/b/2"]  # "." sorts before "/", as in S3
    assert [i.size for i in infos] == [5, 5, 5]
    assert all(i.last_modified_ns > 0 for i in infos)


def test_list_takes_a_partial_name_as_prefix(store: FilesystemObjectStore) -> None:
    for key in ["t/2024/01/a", "t/2024/02/b", "t/2025/01/c"]:
        store.put(key, b"")
    assert [i.key for i in store.list("t/2024/0")] == ["t/2024/01/a", "t/2024/02/b"]
    assert [i.key for i in store.list("")] == ["t/2024/01/a", "t/2024/02/b", "t/2025/01/c"]
    assert list(store.list("nothing/")) == []


def test_list_prefixes_goes_one_level_down(store: FilesystemObjectStore) -> None:
    for key in ["tenant-b/blocks/x", "tenant-a/blocks/y", "top-level-object"]:
        store.put(key, b"")
    assert store.list_prefixes("") == ["tenant-a/", "tenant-b/"]
    assert store.list_prefixes("tenant-a/") == ["tenant-a/blocks/"]
    assert store.list_prefixes("tenant-") == ["tenant-a/", "tenant-b/"]
    assert store.list_prefixes("none/") == []


def test_delete_removes_the_object_and_its_empty_folders(
    store: FilesystemObjectStore, tmp_path: Path
) -> None:
    store.put("t1/blocks/x", b"")
    store.put("t2/blocks/y", b"")
    store.delete("t1/blocks/x")
    with pytest.raises(ObjectNotFound):
        store.get("t1/blocks/x")
    assert store.list_prefixes("") == ["t2/"]
    assert (tmp_path / "objects").is_dir()


def test_delete_of_a_missing_key_is_fine(store: FilesystemObjectStore) -> None:
    store.delete("never/written")


def test_put_leaves_no_temp_file_and_a_readable_object(store: FilesystemObjectStore, tmp_path: Path) -> None:
    store.put("t/k", b"data")
    assert os.listdir(tmp_path / "objects" / "t") == ["k"]
    assert (tmp_path / "objects" / "t" / "k").stat().st_mode & 0o777 == 0o644


def test_an_unfinished_put_is_never_listed(store: FilesystemObjectStore, tmp_path: Path) -> None:
    store.put("t/k", b"data")
    (tmp_path / "objects" / "t" / ".tmp-abc123").write_bytes(b"half a blo")  # a put that crashed
    assert [i.key for i in store.list("")] == ["t/k"]


def test_readers_see_all_or_nothing_while_an_object_is_rewritten(store: FilesystemObjectStore) -> None:
    old, new = b"a" * 4_000_000, b"b" * 4_000_000
    store.put("k", old)
    seen: set[bytes] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            data = store.get("k")
            seen.add(data[:1] + data[-1:] + str(len(data)).encode())

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(10):
        store.put("k", new)
        store.put("k", old)
    done.set()
    reader.join()
    assert seen <= {b"aa4000000", b"bb4000000"}


def test_a_write_failure_removes_its_temp_file(store: FilesystemObjectStore, tmp_path: Path) -> None:
    store.put("t/dir/inner", b"")
    with pytest.raises(StorageError, match="cannot write object t/dir"):
        store.put("t/dir", b"cannot replace a folder")
    assert os.listdir(tmp_path / "objects" / "t") == ["dir"]


@pytest.mark.parametrize(
    "key", ["../escape", "a/../../escape", "/etc/passwd", "a//b", "a/./b", "", "a/", "t/.tmp-x"]
)
def test_unsafe_keys_are_rejected(store: FilesystemObjectStore, key: str, tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="invalid object key"):
        store.put(key, b"x")
    with pytest.raises(StorageError, match="invalid object key"):
        store.get(key)
    with pytest.raises(StorageError, match="invalid object key"):
        store.delete(key)
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize("prefix", ["../", "/", "a/../"])
def test_unsafe_prefixes_are_rejected(store: FilesystemObjectStore, prefix: str) -> None:
    with pytest.raises(StorageError, match="invalid object key"):
        list(store.list(prefix))
    with pytest.raises(StorageError, match="invalid object key"):
        store.list_prefixes(prefix)


def test_open_object_store_picks_the_backend_from_the_config(tmp_path: Path) -> None:
    store = open_object_store(FilesystemConfig(directory=str(tmp_path / "objects")))
    assert isinstance(store, FilesystemObjectStore)
    store.put("k", b"v")
    assert (tmp_path / "objects" / "k").read_bytes() == b"v"
    store.close()
