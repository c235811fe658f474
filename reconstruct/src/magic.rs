//! What kind of file a value's bytes are, by their first bytes (their "magic"): the
//! photos, media, documents, archives, property lists and databases applications keep in
//! BLOB columns and beside their databases. Pure: a look at a prefix, no parsing past it.

/// A kind of file known by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Magic {
    /// JPEG (`FF D8 FF`).
    Jpeg,
    /// PNG.
    Png,
    /// GIF (87a, 89a).
    Gif,
    /// WebP (`RIFF....WEBP`).
    Webp,
    /// HEIC or HEIF (an ISO media file of brand `heic`, `heix`, `mif1`, …).
    Heic,
    /// MP4, MOV or another ISO media file (`....ftyp`).
    Mp4,
    /// PDF.
    Pdf,
    /// A zip archive, or a document made of one (DOCX, XLSX, APK, JAR).
    Zip,
    /// gzip.
    Gzip,
    /// An Apple binary property list archived by `NSKeyedArchiver`.
    NsKeyedArchiver,
    /// An Apple binary property list.
    Bplist,
    /// An SQLite database.
    Sqlite,
    /// Other kinds a file's first bytes name: bzip2, xz, 7-Zip, zstd, XML, ELF, Mach-O,
    /// PE, other RIFF (WAV, AVI), Ogg, MP3 (ID3), FLAC, Matroska.
    OtherFile,
    /// No signature, but a protocol buffer's fields parse from the first byte: a guess,
    /// said as one.
    ProtobufLike,
}

impl Magic {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Magic::Jpeg => "jpeg",
            Magic::Png => "png",
            Magic::Gif => "gif",
            Magic::Webp => "webp",
            Magic::Heic => "heic",
            Magic::Mp4 => "mp4",
            Magic::Pdf => "pdf",
            Magic::Zip => "zip",
            Magic::Gzip => "gzip",
            Magic::NsKeyedArchiver => "nskeyedarchiver",
            Magic::Bplist => "bplist",
            Magic::Sqlite => "sqlite",
            Magic::OtherFile => "other_file",
            Magic::ProtobufLike => "protobuf_like",
        }
    }

    /// The file name extension a value of this kind is written out with.
    pub fn extension(self) -> &'static str {
        match self {
            Magic::Jpeg => "jpg",
            Magic::Png => "png",
            Magic::Gif => "gif",
            Magic::Webp => "webp",
            Magic::Heic => "heic",
            Magic::Mp4 => "mp4",
            Magic::Pdf => "pdf",
            Magic::Zip => "zip",
            Magic::Gzip => "gz",
            Magic::NsKeyedArchiver | Magic::Bplist => "plist",
            Magic::Sqlite => "sqlite",
            Magic::OtherFile | Magic::ProtobufLike => "bin",
        }
    }
}

/// Signatures at offset 0, each with its kind.
const AT_START: [(&[u8], Magic); 25] = [
    (b"\xff\xd8\xff", Magic::Jpeg),
    (b"\x89PNG\r\n\x1a\n", Magic::Png),
    (b"GIF87a", Magic::Gif),
    (b"GIF89a", Magic::Gif),
    (b"%PDF", Magic::Pdf),
    (b"PK\x03\x04", Magic::Zip),
    (b"PK\x05\x06", Magic::Zip),
    (b"\x1f\x8b", Magic::Gzip),
    (b"SQLite format 3\0", Magic::Sqlite),
    (b"BZh", Magic::OtherFile),
    (b"\xfd7zXZ\0", Magic::OtherFile),
    (b"7z\xbc\xaf\x27\x1c", Magic::OtherFile),
    (b"(\xb5/\xfd", Magic::OtherFile),
    (b"<?xml", Magic::OtherFile),
    (b"\x7fELF", Magic::OtherFile),
    (b"\xca\xfe\xba\xbe", Magic::OtherFile),
    (b"\xcf\xfa\xed\xfe", Magic::OtherFile),
    (b"\xce\xfa\xed\xfe", Magic::OtherFile),
    (b"MZ", Magic::OtherFile),
    (b"OggS", Magic::OtherFile),
    (b"ID3", Magic::OtherFile),
    (b"fLaC", Magic::OtherFile),
    (b"\x1aE\xdf\xa3", Magic::OtherFile),
    (b"wOFF", Magic::OtherFile),
    (b"wOF2", Magic::OtherFile),
];

/// The kind of the file whose first bytes are `head` (give 64 or more where there are),
/// when they name one; `None` for bytes of no known kind.
pub fn magic(head: &[u8]) -> Option<Magic> {
    if let Some((_, kind)) = AT_START.iter().find(|(s, _)| head.starts_with(s)) {
        return Some(*kind);
    }
    if head.starts_with(b"bplist") {
        // A keyed archive names its archiver among its first objects.
        let keyed = head.windows(15).any(|w| w == b"NSKeyedArchiver");
        return Some(if keyed {
            Magic::NsKeyedArchiver
        } else {
            Magic::Bplist
        });
    }
    if head.starts_with(b"RIFF") {
        return Some(if head.get(8..12) == Some(b"WEBP") {
            Magic::Webp
        } else {
            Magic::OtherFile
        });
    }
    if head.get(4..8) == Some(b"ftyp") {
        let brand = head.get(8..12).unwrap_or_default();
        let heif = [
            b"heic", b"heix", b"hevc", b"heim", b"heis", b"mif1", b"msf1", b"avif",
        ];
        return Some(if heif.iter().any(|b| brand == *b) {
            Magic::Heic
        } else {
            Magic::Mp4
        });
    }
    protobuf_like(head).then_some(Magic::ProtobufLike)
}

/// Whether the bytes parse as a protocol buffer's fields from the first byte to the end
/// of `head` (or of the fields that fit in it): two fields or more, each a tag of wire
/// type 0, 1, 2 or 5 and field number 1 to 2^29 - 1, its value inside the bytes.
fn protobuf_like(head: &[u8]) -> bool {
    let varint = |at: usize| -> Option<(u64, usize)> {
        let mut value = 0u64;
        for k in 0..10 {
            let byte = *head.get(at + k)?;
            value |= u64::from(byte & 0x7f) << (7 * k);
            if byte & 0x80 == 0 {
                return Some((value, at + k + 1));
            }
        }
        None
    };
    let (mut at, mut fields) = (0usize, 0u32);
    while at < head.len() {
        let Some((tag, next)) = varint(at) else {
            // A field cut by the end of the prefix.
            break;
        };
        let (number, wire) = (tag >> 3, tag & 7);
        if number == 0 || number >= 1 << 29 {
            return false;
        }
        at = match wire {
            0 => match varint(next) {
                Some((_, after)) => after,
                None => break,
            },
            1 => next + 8,
            5 => next + 4,
            2 => match varint(next) {
                Some((len, after)) => {
                    match usize::try_from(len).ok().and_then(|l| after.checked_add(l)) {
                        Some(end) => end,
                        None => return false,
                    }
                }
                None => break,
            },
            _ => return false,
        };
        fields += 1;
    }
    fields >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_known_by_its_first_bytes() {
        let cases: [(&[u8], Option<Magic>); 12] = [
            (b"\xff\xd8\xff\xe0\0\x10JFIF\0", Some(Magic::Jpeg)),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some(Magic::Png)),
            (b"GIF89a\x01\0\x01\0", Some(Magic::Gif)),
            (b"RIFF\x24\0\0\0WEBPVP8 ", Some(Magic::Webp)),
            (b"\0\0\0\x18ftypheic\0\0\0\0", Some(Magic::Heic)),
            (b"\0\0\0\x20ftypisom\0\0\x02\0", Some(Magic::Mp4)),
            (b"%PDF-1.7\n", Some(Magic::Pdf)),
            (b"bplist00\xd4\x01\x02\x03\x04\x05\x06\x07\x0aX$versionY$archiverT$topX$objects_\x10\x0fNSKeyedArchiver", Some(Magic::NsKeyedArchiver)),
            (b"bplist00\xd1\x01\x02", Some(Magic::Bplist)),
            (b"SQLite format 3\0\x10\0", Some(Magic::Sqlite)),
            // Field 1, a string of 5 bytes; field 2, a varint 150.
            (b"\x0a\x05hello\x10\x96\x01", Some(Magic::ProtobufLike)),
            (b"plain words, no kind", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(magic(bytes), want, "{bytes:?}");
        }
    }
}

/// The kinds of the BLOB values of one table's rows, counted by their place in the
/// record; a BLOB of no known kind counts as `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobKinds(pub std::collections::BTreeMap<(usize, Option<Magic>), u64>);

/// Bytes of a value looked at for its kind.
const LOOKED_AT: u64 = 64;

impl BlobKinds {
    /// Counts the BLOBs of the record in `payload` (the local part is enough: only the
    /// first bytes of each value are looked at). A record whose header cannot be read
    /// counts nothing.
    pub fn add_record(&mut self, payload: &[u8]) {
        let at = pager::Location {
            page: pager::PageNo::FIRST,
            offset: 0,
        };
        // The values start where the header ends: each value's place is known as its
        // serial type is read, and nothing is collected.
        // The payload may be cut short: its header is read as far as it goes, first
        // only to know that it reads.
        let Ok(header_size) = pager::record::visit_record_header(payload, u64::MAX, at, |_| {})
        else {
            return;
        };
        let (mut place, mut offset) = (0usize, header_size);
        let _ = pager::record::visit_record_header(payload, u64::MAX, at, |t| {
            if let pager::SerialType::Blob(n) = t {
                if n > 0 {
                    let start = usize::try_from(offset).unwrap_or(usize::MAX);
                    let end = usize::try_from(offset.saturating_add(n.min(LOOKED_AT)))
                        .unwrap_or(usize::MAX);
                    let head = payload
                        .get(start..end.min(payload.len()))
                        .unwrap_or_default();
                    *self.0.entry((place, magic(head))).or_insert(0) += 1;
                }
            }
            offset = offset.saturating_add(t.body_len());
            place += 1;
        });
    }

    /// Adds another tally's counts.
    pub fn merge(&mut self, other: BlobKinds) {
        for (k, n) in other.0 {
            *self.0.entry(k).or_insert(0) += n;
        }
    }
}

#[cfg(test)]
mod tally {
    use super::*;

    #[test]
    fn each_blob_of_a_record_is_counted_by_its_place_and_kind() {
        // A record of three values: the integer 7, a JPEG's first bytes, an empty blob,
        // text, and a blob of no kind.
        let jpeg = b"\xff\xd8\xff\xe0\0\x10JFIF\0";
        let other = b"\x00\x01\x02\x03";
        let types = [
            1u8,
            12 + 2 * jpeg.len() as u8,
            12,
            13 + 2 * 3,
            12 + 2 * other.len() as u8,
        ];
        let mut record = vec![1 + types.len() as u8];
        record.extend(types);
        record.push(7);
        record.extend(jpeg);
        record.extend(b"abc");
        record.extend(other);
        let mut kinds = BlobKinds::default();
        kinds.add_record(&record);
        kinds.add_record(&record);
        let want: Vec<((usize, Option<Magic>), u64)> =
            vec![((1, Some(Magic::Jpeg)), 2), ((4, None), 2)];
        assert_eq!(kinds.0.into_iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_record_whose_header_does_not_read_counts_nothing() {
        // A JPEG's bytes, then a serial type cut in the middle of its varint.
        let jpeg = b"\xff\xd8\xff\xe0\0\x10JFIF\0";
        let mut record = vec![3, 12 + 2 * jpeg.len() as u8, 0x81];
        record.extend(jpeg);
        let mut kinds = BlobKinds::default();
        kinds.add_record(&record);
        assert!(kinds.0.is_empty(), "{:?}", kinds.0);
    }
}
