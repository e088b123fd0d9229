package backup

import (
	"encoding/binary"
	"hash/crc32"
)

func binaryAppendCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}
