package web

import "os"

func writeGarbage(path string) error {
	os.Remove(path)
	return os.WriteFile(path, []byte("not a jpeg"), 0o644)
}
