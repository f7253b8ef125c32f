package scenario

import (
	"os"
	"testing"
)

// BenchmarkLoad measures loading the shared scenarios (the 9 MB
// diverse-10000 should take well under a second).
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"diverse-100", "diverse-10000"} {
		data, err := os.ReadFile(sharedScenario(b, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Load(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
