"""Storage: the only code that speaks Chroma.

``_chroma`` opens a store (a directory or a server) and explains failures; ``_lock`` keeps one
writing process per embedded store; ``_records`` converts records; ``_side`` keeps records
without vectors; ``_directory`` lists each partition's memories; ``_mirrors`` keeps the large
partitions in collections of their own, and ``_postings`` their keyword postings;
``_repository`` offers every read and write the work modules need, and the change feed other
instances catch up from.
"""

from memento_core._storage._chroma import (
    PAGE,
    PLACEHOLDER_VECTOR,
    SCHEMA_VERSION,
    ChromaStore,
    StoreInfo,
)
from memento_core._storage._directory import MERGE_AT, Members, PartitionDirectory
from memento_core._storage._lock import acquire as acquire_write_lock
from memento_core._storage._lock import release as release_write_lock
from memento_core._storage._records import (
    EPOCH,
    NEVER,
    check_storable,
    event_from_record,
    event_metadata,
    from_micros,
    item_from_record,
    item_metadata,
    legacy_link_id,
    link_from_record,
    link_id,
    link_metadata,
    to_micros,
)
from memento_core._storage._repository import (
    HISTORY_HEAD,
    SIDE_OWNER_KEY,
    Change,
    IndexRecord,
    Repository,
)
from memento_core._storage._side import SideRecord, SideRecords

__all__ = [
    "EPOCH",
    "HISTORY_HEAD",
    "MERGE_AT",
    "NEVER",
    "PAGE",
    "PLACEHOLDER_VECTOR",
    "SCHEMA_VERSION",
    "SIDE_OWNER_KEY",
    "Change",
    "ChromaStore",
    "IndexRecord",
    "Members",
    "PartitionDirectory",
    "Repository",
    "SideRecord",
    "SideRecords",
    "StoreInfo",
    "acquire_write_lock",
    "check_storable",
    "event_from_record",
    "event_metadata",
    "from_micros",
    "item_from_record",
    "item_metadata",
    "legacy_link_id",
    "link_from_record",
    "link_id",
    "link_metadata",
    "release_write_lock",
    "to_micros",
]
