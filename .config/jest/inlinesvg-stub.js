// @grafana/ui's icons fetch their SVG files over HTTP, which jsdom cannot; render an empty svg instead.
const React = require('react');

function InlineSVG(props) {
  const { title, innerRef, className, width, height, style } = props;
  const rest = {
    className,
    width,
    height,
    style,
    'aria-hidden': props['aria-hidden'],
    'data-testid': props['data-testid'],
  };
  return React.createElement('svg', { ...rest, ref: innerRef, 'aria-label': title });
}

module.exports = { __esModule: true, default: InlineSVG, cacheStore: {} };
