package bucket

// Slots is the number of hash slots of a Redis Cluster: a key lives in the slot of the
// CRC16 of its hash tag, modulo Slots, and each master serves ranges of slots.
const Slots = 16384

// Slot returns the Redis Cluster hash slot of Key(identity), from 0 to Slots-1: the
// slot whose master keeps identity's state in a cluster.
func Slot(identity string) int {
	var buf [64]byte
	key := appendKey(buf[:0], identity)
	tag := key[len(KeyPrefix)+1 : len(key)-1]
	if len(tag) == 0 {
		tag = key // an empty hash tag: Redis hashes the whole key
	}
	return slotOf(tag)
}

// SecretSlot is the Redis Cluster hash slot of SecretKey, which has no hash tag: in a
// cluster, the master of this slot keeps the secret that every instance reads before
// its first reserve, settle, acquire or release, whatever the identity.
var SecretSlot = slotOf([]byte(SecretKey))

// SecretsKeptSlot is the Redis Cluster hash slot of SecretsKeptKey, which has no hash
// tag either: in a cluster, its master keeps the secrets kept to verify older ids,
// read with SecretKey.
var SecretsKeptSlot = slotOf([]byte(SecretsKeptKey))

// slotOf returns the hash slot of a key whose hashed part is b.
func slotOf(b []byte) int {
	var crc uint16 // CRC-16/XMODEM, as Redis Cluster computes it
	for _, c := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^c]
	}
	return int(crc % Slots)
}

// crc16Table holds CRC-16/XMODEM (polynomial 0x1021) of every byte value.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
