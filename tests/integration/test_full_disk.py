"""The filesystem object store on a disk that is really full: a clear StorageFull, nothing left behind."""

from pathlib import Path

import pytest
from infra import tmpfs

from flamewatch.storage.errors import StorageFull, StorageUnavailable
from flamewatch.storage.filesystem import FilesystemObjectStore


@pytest.mark.root
def test_a_full_disk_raises_storage_full_naming_the_directory_and_the_key(tmp_path: Path) -> None:
    with tmpfs.mounted(tmp_path / "objects", "1m") as root:
        store = FilesystemObjectStore(root)
        store.put("t/blocks/0/kept.parquet", b"x" * 1000)
        filler = tmpfs.fill(root)
        with pytest.raises(StorageFull) as info:
            store.put("t/blocks/0/2026/01/02/lost.parquet", b"y" * 100_000)
        assert isinstance(info.value, StorageUnavailable)  # answered 503 / UNAVAILABLE
        assert str(info.value) == (f"object directory {root} is full: cannot write object "
                                   "t/blocks/0/2026/01/02/lost.parquet: No space left on device")
        files = sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file())
        assert files == ["filler", "t/blocks/0/kept.parquet"]  # no temp file, no half object
        filler.unlink()
        store.put("t/blocks/0/2026/01/02/lost.parquet", b"y" * 100_000)
        assert store.get("t/blocks/0/2026/01/02/lost.parquet") == b"y" * 100_000
