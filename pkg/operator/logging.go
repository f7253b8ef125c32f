package operator

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns joiner's structured logger: one zap JSON object per
// line with keys level, time (ISO 8601), logger, message (and caller at
// debug), written to w at the given level (debug, info or error). logr's
// V(1) is zap's debug.
func NewLogger(level string, w io.Writer) (logr.Logger, error) {
	var lvl zapcore.Level
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "info":
		lvl = zapcore.InfoLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		return logr.Logger{}, fmt.Errorf("log level %q is not one of debug, info, error", level)
	}
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey:        "time",
		LevelKey:       "level",
		NameKey:        "logger",
		CallerKey:      "caller",
		MessageKey:     "message",
		StacktraceKey:  "stacktrace",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.CapitalLevelEncoder,
		EncodeTime:     zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeCaller:   zapcore.ShortCallerEncoder,
		EncodeName:     zapcore.FullNameEncoder,
	})
	sink := zapcore.AddSync(w)
	opts := []zap.Option{zap.ErrorOutput(sink), zap.AddStacktrace(zapcore.DPanicLevel)}
	if lvl == zapcore.DebugLevel {
		opts = append(opts, zap.AddCaller())
	}
	return zapr.NewLogger(zap.New(zapcore.NewCore(enc, sink, lvl), opts...)), nil
}
